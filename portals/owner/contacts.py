"""A customer's people in the console: listed on the customer's page, added, made primary and removed there, each
through the functions the API and the CLI call (calendars/contacts.py). A refusal is an error on its field."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.admin.utils import quote
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from calendars.contacts import contact_create, contact_remove, contact_update
from calendars.models import Contact, Subject
from timers.domains import domain_now, domain_writable
from timers.errors import KeepingTimeError
from timers.ids import brand_domain


class ContactForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="Their name: Ada Lovelace")
    email = forms.CharField(max_length=254, help_text="Where their dates' reminders and notices go")
    role = forms.CharField(max_length=32, required=False,
                           help_text="Your word for them (officer, bookkeeper): a Service's dates for that role go "
                                     "to them")
    phone = forms.CharField(max_length=32, required=False)
    zone = forms.CharField(max_length=64, required=False,
                           help_text="The zone their times are said in, e.g. America/Los_Angeles (blank: the "
                                     "customer's calendar's)")
    primary = forms.BooleanField(required=False, help_text="The one a date of the customer's goes to first")


def values_of(cleaned: dict, *, prefix: str = "") -> dict:
    """A form's contact as the service takes it (blank optional fields left out)."""
    out = {k: cleaned[f"{prefix}{k}"] for k in ("name", "email") if cleaned.get(f"{prefix}{k}")}
    out.update({k: cleaned[f"{prefix}{k}"] for k in ("role", "phone", "zone") if cleaned.get(f"{prefix}{k}")})
    if cleaned.get(f"{prefix}primary"):
        out["primary"] = True
    return out


def contacts_table(obj: Subject) -> str:
    # The page's own form carries the CSRF token: each button posts it to the contact's act (formaction).
    rows = []
    for c in obj.contacts.order_by(*Contact.ORDER):
        act = reverse("admin:calendars_subject_contact", args=[quote(obj.pk), quote(c.pk)])
        primary = (format_html("<em>{}</em>", "primary: their dates go here first") if c.primary else
                   format_html('<button name="do" value="primary" type="submit" formaction="{}">Make primary</button>',
                               act))
        rows.append(format_html(
            '<div class="contact" style="margin-bottom:.75em"><strong>{}</strong> · {} · {}{}<br>{} '
            '<button name="do" value="remove" type="submit" formaction="{}">Remove</button></div>',
            c.name, c.email, c.role, f" · {c.zone}" if c.zone else "", primary, act))
    add = format_html('<a class="button" href="{}">Add a contact</a>',
                      reverse("admin:calendars_subject_contact_add", args=[quote(obj.pk)]))
    nobody = mark_safe("<div>nobody yet: their dates have no one to remind</div>")  # constant text
    return format_html("{}{}", format_html_join("", "{}", ((r,) for r in rows)) or nobody, add)


def _writable(subject: Subject) -> None:
    domain_writable(domain=brand_domain(subject.domain, subject.brand_id))


def contact_add(model_admin, request: HttpRequest, subject: Subject, page) -> HttpResponse:
    back = reverse("admin:calendars_subject_change", args=[quote(subject.pk)])
    form = ContactForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                _writable(subject)
                contact = contact_create(subject=subject, values=values_of(form.cleaned_data),
                                         now=domain_now(domain=subject.domain))
        except KeepingTimeError as exc:
            name = (getattr(exc, "param", "") or "").split(".")[-1]
            form.add_error(name if name in form.fields else None, exc.message.split(": ", 1)[-1])
        else:
            messages.success(request, f"{contact.name} is one of {subject.name}'s people now"
                                      f"{' (primary)' if contact.primary else ''}.")
            return HttpResponseRedirect(back)
    return page(request, model_admin, title=f"Add a contact to {subject.name}", form=form, obj=subject,
                submit="Add the contact", cancel=back,
                intro="A person of the customer's: the dates their role answers for go to them, with reminders "
                      "and notices by email.")


@require_POST
def contact_act(request: HttpRequest, subject: Subject, contact_id: str) -> HttpResponse:
    contact = Contact.objects.filter(subject=subject, pk=contact_id).first()
    if contact is None:
        raise Http404("no such contact")
    do = request.POST.get("do", "")
    try:
        with transaction.atomic():
            _writable(subject)
            if do == "primary":
                contact_update(contact=contact, values={"primary": True})
                messages.success(request, f"{contact.name} is {subject.name}'s primary contact now.")
            elif do == "remove":
                contact_remove(contact=contact)
                messages.success(request, f"{contact.name} is no longer one of {subject.name}'s people; the dates "
                                          "they answered for went to whoever their role names now.")
            else:
                messages.error(request, "That button does nothing here. Nothing was changed.")
    except KeepingTimeError as exc:
        messages.error(request, f"Not done: {exc.message}. Nothing was changed.")
    return HttpResponseRedirect(reverse("admin:calendars_subject_change", args=[quote(subject.pk)]))
