"""The apps keep no tables of their own: who may use them is the tenant's (``timers.models.Membership``), and a
customer's portal link is an object the brand makes over the API (``services.models.PortalSession``)."""
