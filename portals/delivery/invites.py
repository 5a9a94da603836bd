"""An invite's one-time link (services.members.member_invite): the person its address names accepts it here.

The token leaves the address at once (moved into the session, then a redirect to ``invite/accept``), so it is
never in a referrer or the page's history. Then, by who is here:

- signed in as the account the address names: one button, *Join*, and they are in the brand;
- signed in as someone else: this invite is not theirs (sign out, sign in as the address's account);
- not signed in, the address has an account: sign in (back here after), then *Join*;
- not signed in, no account: choose a password; the account is made with the address as its username, they
  join and are signed in.

A used, replaced or expired link opens nothing, and says so. Until accepted, the invite is nobody's place in the
brand: the console, the delivery portal and the API see no member in it.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from services.members import accounts_of, invite_open, invited_is, member_accept, member_accept_new
from timers.errors import KeepingTimeError

SESSION_KEY = "delivery_invite"


def invite_link(request: HttpRequest, token: str) -> HttpResponse:
    request.session[SESSION_KEY] = token
    return redirect("delivery:invite-accept")


@require_http_methods(["GET", "POST"])
def invite_accept(request: HttpRequest) -> HttpResponse:
    token = request.session.get(SESSION_KEY, "")
    try:
        membership = invite_open(token)
    except KeepingTimeError:
        return render(request, "portals/delivery/invite.html", {"usable": False}, status=404)
    user = request.user if request.user.is_authenticated else None
    email = membership.invited_email
    ctx = {"usable": True, "brand": membership.brand.name, "email": email, "name": membership.name,
           "owner": membership.role == "owner", "user": user,
           "login": f"{reverse('delivery:login')}?next={reverse('delivery:invite-accept')}"}
    if user is not None:
        ctx["theirs"] = invited_is(user, membership)
    else:
        ctx["has_account"] = accounts_of(email).exists()
    if request.method == "POST":
        try:
            if user is not None:
                member_accept(token=token, user=user)
            elif not ctx["has_account"]:
                if request.POST.get("password1", "") != request.POST.get("password2", ""):
                    raise KeepingTimeError("the two passwords differ", code="password_mismatch")
                user = member_accept_new(token=token, password=request.POST.get("password1", ""))
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            else:
                return redirect(ctx["login"])
        except KeepingTimeError as exc:
            ctx["error"] = exc.message[:1].upper() + exc.message[1:] + "."
            return render(request, "portals/delivery/invite.html", ctx, status=400)
        request.session.pop(SESSION_KEY, None)
        messages.success(request, f"You are in {membership.brand.name} now.")
        return redirect("delivery:home")
    return render(request, "portals/delivery/invite.html", ctx)
