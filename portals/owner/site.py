"""The owner console's AdminSite: brand-scoped, its index the dashboard, viewed "as of" a clock domain.

Every ModelAdmin registered here (the console's own, in ``portals.owner.admin``, ``customers``, ``members`` and
``webhooks``, registered by ``PortalsConfig.ready``; and every app's registered on Django's default site, adopted
when the URLs are built) is wrapped in ``BrandScoped``: its querysets, its
foreign-key choices and its related list filters hold only the request's brands. Pages print times in the
brand's zone (``timezone.override`` around every console view), and the header names it.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin import RelatedOnlyFieldListFilter
from django.contrib.admin.utils import get_fields_from_path
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Model
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone

from calendars.models import ClockItem
from timers.api.throttles import sign_in_limited
from timers.models import Brand, in_domain

from . import views
from .actions import undo_offer
from .dashboard import dashboard
from .scope import as_of, is_owner, request_brands, scope, test_clocks


def _has_domain(model: type[Model]) -> bool:
    return any(f.name == "domain" for f in model._meta.concrete_fields)


class BrandScoped:
    """Mixed in before a ModelAdmin: only the request's brands' objects, anywhere the admin reads them."""

    def get_queryset(self, request):
        qs = scope(super().get_queryset(request), request_brands(request))
        match = getattr(request, "resolver_match", None)
        opts = self.model._meta
        if (match is not None and match.url_name == f"{opts.app_label}_{opts.model_name}_changelist"
                and _has_domain(self.model) and as_of(request).chosen):
            qs = qs.filter(in_domain(as_of(request).domain))  # the header's "as of": lists show that clock's
        return qs

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        brands = request_brands(request)
        if field is not None and brands is not None and hasattr(field, "queryset"):
            field.queryset = scope(field.queryset, brands)
        return field

    def get_list_filter(self, request):
        filters = list(super().get_list_filter(request))
        if request_brands(request) is None:
            return filters
        # Django's related filter lists every row of the related table (another brand's name): offer only
        # the values the owner's own objects hold.
        out = []
        for f in filters:
            if isinstance(f, str):
                try:
                    field = get_fields_from_path(self.model, f)[-1]
                except (FieldDoesNotExist, Exception):
                    field = None
                if field is not None and field.is_relation:
                    out.append((f, RelatedOnlyFieldListFilter))
                    continue
            out.append(f)
        return out


class OwnerSite(admin.AdminSite):
    site_title = "Keeping Time"
    site_header = "Keeping Time · owner console"
    index_title = "Dates at risk"
    index_template = "portals/owner/index.html"
    enable_nav_sidebar = False
    site_url = None  # the apps have no site page of their own to "view" (it answered the API's JSON 404)

    def __init__(self, name="admin"):
        super().__init__(name=name)
        self._adopted = False

    # -- who may enter ---------------------------------------------------------------------------------------
    def has_permission(self, request):
        user = request.user
        return bool(user.is_active and user.is_staff and (user.is_superuser or is_owner(user)))

    def login(self, request, extra_context=None):
        """Each try counts against the client address's sign-in rate (KT_SIGN_IN_RATE_LIMIT): over it, a 429
        page with Retry-After, and the password is not checked."""
        if request.method == "POST":
            limited = sign_in_limited(request)
            if limited is not None:
                return limited
        return super().login(request, extra_context)

    # -- registration: every admin is brand-scoped -------------------------------------------------------------
    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, BrandScoped):
            admin_class = type(admin_class.__name__, (BrandScoped, admin_class), {"__module__": admin_class.__module__})
        return super().register(model_or_iterable, admin_class, **options)

    def adopt(self) -> None:
        """Register every other app's admins from Django's default site (auth's users and groups, the runtime's
        and the calendars' admins), each wrapped in BrandScoped, where the console has none of its own (those
        registered when the app was ready)."""
        if self._adopted:
            return
        self._adopted = True
        for model, model_admin in list(admin.site._registry.items()):
            if not self.is_registered(model):
                self.register(model, type(model_admin))

    def check(self, app_configs):
        self.adopt()  # the system checks see every admin the console serves
        return super().check(app_configs)

    def get_urls(self):
        self.adopt()
        return [
            path("as-of/", self.admin_view(views.as_of_view), name="owner-as-of"),
            path("settle/", self.admin_view(views.settle_view), name="owner-settle"),
            path("resend/", self.admin_view(views.resend_view), name="owner-resend"),
            *super().get_urls(),
        ]

    def admin_view(self, view, cacheable=False):
        """Every console page prints times in the brand's zone (the header names it)."""
        def zoned(request, *args, **kwargs):
            if request.user.is_authenticated and self.has_permission(request):
                with timezone.override(as_of(request).tz):
                    response = view(request, *args, **kwargs)
                    # A TemplateResponse renders after the view returns: render it here, in the zone.
                    if hasattr(response, "render") and not getattr(response, "is_rendered", True):
                        response.render()
                    return response
            return view(request, *args, **kwargs)

        zoned.__name__ = getattr(view, "__name__", "view")
        zoned.__wrapped__ = view
        for attr in ("csrf_exempt", "admin_site", "login_url"):
            if hasattr(view, attr):
                setattr(zoned, attr, getattr(view, attr))
        return super().admin_view(zoned, cacheable)

    # -- every page: the brand's name, the zone and the as-of selector ----------------------------------------
    def each_context(self, request):
        ctx = super().each_context(request)
        if not (request.user.is_authenticated and self.has_permission(request)):
            return ctx
        brands = request_brands(request)
        at = as_of(request)
        names = list(Brand.objects.filter(pk__in=brands).order_by("name").values_list("name", flat=True)) \
            if brands is not None else []
        if at.clock is not None and brands is None:
            names = [at.clock.brand.name]
        ctx["brand_names"] = names
        if names:
            ctx["site_header"] = f"{' · '.join(names)} · owner console"
            ctx["site_title"] = f"{' · '.join(names)} · Keeping Time"
        choices = [("live", "the live clock")]
        for tc in test_clocks(brands):
            label = f"test clock {tc.name or tc.id} · {tc.frozen_time.astimezone(at.tz):%Y-%m-%d %H:%M}"
            if brands is None:
                label += f" · {tc.brand.name}"
            choices.append((tc.id, label))
        ctx.update(as_of=at, as_of_choices=choices, as_of_now=at.now.astimezone(at.tz),
                   as_of_zone=at.zone, owner_undo=self._undo(request, brands))
        return ctx

    @staticmethod
    def _undo(request, brands) -> dict | None:
        """The date the owner last marked done, while it is still done: its undo, or why there is none."""
        held = request.session.get(views.UNDO) or ""
        if not held.isdigit():
            return None
        item = (scope(ClockItem.objects.select_related("clock__subject"), brands)
                .filter(pk=int(held), status=ClockItem.Status.SATISFIED).first())
        return undo_offer(item) if item is not None else None

    # -- the index is the dashboard ------------------------------------------------------------------------------
    def index(self, request, extra_context=None):
        at = as_of(request)
        context = {
            **self.each_context(request),
            "title": self.index_title,
            "subtitle": None,
            "app_list": self.get_app_list(request),
            "board": dashboard(at),
            **(extra_context or {}),
        }
        request.current_app = self.name
        return TemplateResponse(request, self.index_template, context)


site = OwnerSite(name="admin")
