"""A brand's owners hold the console's permissions by their Membership, not by rows in auth's permission
tables: an owner (an active staff user with an owner Membership) may view every brand-scoped model, and
make the changes the console offers (closed days, the controls on jobs, clocks, subscriptions, Tasks,
notifications and schedules). Which objects is the site's business (portals.owner.scope): always their brands' alone.

Authenticates no one (ModelBackend does): it only answers ``has_perm``."""

from __future__ import annotations

from django.apps import apps
from django.contrib.auth.backends import BaseBackend

from .scope import is_owner, scopable

# Beyond view: the changes the console makes for an owner (each goes through a service function).
CHANGES = {
    "calendars": {"calendar": ("add", "change"), "closedday": ("add", "change", "delete"), "clock": ("change",),
                  "clockitem": ("change",), "subject": ("add", "change")},
    "services": {"job": ("add", "change"), "subscription": ("add", "change"), "task": ("change",),
                 "notification": ("change",)},
    "timers": {"apikey": ("add", "change"), "schedule": ("change",)},
}


def owner_may(perm: str) -> bool:
    """Whether an owner holds ``perm`` ("app_label.codename_model")."""
    app_label, _, codename = perm.partition(".")
    action, _, model_name = codename.partition("_")
    try:
        model = apps.get_model(app_label, model_name)
    except LookupError:
        return False
    if not scopable(model):
        return False
    return action == "view" or action in CHANGES.get(app_label, {}).get(model_name, ())


class OwnerPermissions(BaseBackend):
    def has_perm(self, user_obj, perm, obj=None):
        return is_owner(user_obj) and owner_may(perm)

    def has_module_perms(self, user_obj, app_label):
        if not is_owner(user_obj):
            return False
        return any(scopable(m) for m in apps.get_app_config(app_label).get_models()) if app_label in {
            c.label for c in apps.get_app_configs()} else False
