"""The owner console: the Django admin on a custom AdminSite (``portals.owner.site.site``), brand-scoped, whose
index is the dashboard of dates at risk."""
