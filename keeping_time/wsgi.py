"""The WSGI application (gunicorn.conf.py's ``wsgi_app``, runserver's WSGI_APPLICATION): Django, with the feed's
polls answered in front of it.

A calendar app polls its feed every few minutes and almost always gets a 304 (or, without a validator, the same
body again): the answer is the feed's probe, one statement (calendars/feed_stamp.py), yet Django's request
cycle around it (the middleware, the URL resolver, the view's dispatch) cost as much CPU again. ``FeedPolls``
answers exactly those requests, a GET of ``/subjects/<id>/calendar.ics`` that the probe can answer, with the
view's own code (``SubjectFeedView.from_probe``), under the same request signals (so an old or broken database
connection is closed as Django would), and with what the middleware adds to such a response (their own
``process_response``). Everything else goes to Django unchanged: another method or path, a cookie, a request
the middleware would redirect or refuse, a middleware list this layer does not know, a feed turned off, an
answer the probe cannot give (a new stamp, a wrong token, a cache miss), an error. It logs nothing of its own:
gunicorn's access log (which cuts the token, gunicorn.conf.py) sees every request either way.
"""

import os
import re

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "keeping_time.settings")
django_application = get_wsgi_application()

from django.conf import settings  # noqa: E402 (Django is set up by the line above)
from django.core import signals  # noqa: E402
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest, get_script_name  # noqa: E402
from django.middleware.clickjacking import XFrameOptionsMiddleware  # noqa: E402
from django.middleware.common import CommonMiddleware  # noqa: E402
from django.middleware.security import SecurityMiddleware  # noqa: E402
from django.urls import Resolver404, resolve, set_script_prefix  # noqa: E402

# An id as the runtime makes them (ASCII, at most 32 characters, as feed_token_digest accepts): any other path
# goes to Django, which decodes and resolves it as it always has.
_FEED_PATH = re.compile(r"/subjects/([A-Za-z0-9_-]{1,32})/calendar\.ics")
# What each middleware does to a poll this layer answers. These add headers to it, or redirect or refuse it
# first: their own hooks run here, in the settings' order.
_HOOKED = {
    "django.middleware.security.SecurityMiddleware": SecurityMiddleware,
    "django.middleware.common.CommonMiddleware": CommonMiddleware,
    "django.middleware.clickjacking.XFrameOptionsMiddleware": XFrameOptionsMiddleware,
}
# These act only on what the layer leaves to Django (a cookie: a session, a CSRF token, a user, a message) or
# on other paths (static files). Any middleware in neither set, and Django answers every request.
_INERT = frozenset({
    "whitenoise.middleware.WhiteNoiseMiddleware", "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware", "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
})


def _unused(request):  # the middleware's get_response: this layer calls their hooks, never their chain
    raise AssertionError("FeedPolls runs the middleware's hooks only")


class FeedPolls:
    """The feed's polls answered before Django's stack; every other request passed to ``app``."""

    def __init__(self, app):
        self.app = app
        # Built once, as Django builds its middleware once per handler (their settings read then).
        names = list(settings.MIDDLEWARE)
        self.known = all(name in _HOOKED or name in _INERT for name in names)
        self.middleware = [_HOOKED[name](_unused) for name in names if name in _HOOKED]
        self._routes: dict[str, bool] = {}

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") == "GET" and "HTTP_COOKIE" not in environ:
            found = _FEED_PATH.fullmatch(environ.get("PATH_INFO", ""))
            if found is not None:
                answered = self.poll(environ, start_response, found[1])
                if answered is not None:
                    return answered
        return self.app(environ, start_response)

    def _routed(self) -> bool:
        """The feed's path still goes to the feed's view (per URLconf, looked up once)."""
        urlconf = settings.ROOT_URLCONF
        routed = self._routes.get(urlconf)
        if routed is None:
            from calendars.api import SubjectFeedView  # noqa: PLC0415 - the apps load after this module

            try:
                match = resolve("/subjects/sbj_x/calendar.ics", urlconf)
            except Resolver404:
                match = None
            routed = self._routes[urlconf] = getattr(match and match.func, "view_class", None) is SubjectFeedView
        return routed

    def poll(self, environ, start_response, subject_id: str):
        """The probe's answer with the headers Django's stack would give it, or None (Django answers)."""
        if not self.known or not self._routed():
            return None
        from calendars.api import SubjectFeedView, feed_settings  # noqa: PLC0415 - the apps load after this module

        if not feed_settings().get("FEED_STAMP", True):
            return None
        environ = dict(environ)  # WSGIRequest writes to its environ: Django's, if it answers, starts clean
        set_script_prefix(get_script_name(environ))
        signals.request_started.send(sender=WSGIHandler, environ=environ)
        try:
            request = WSGIRequest(environ)
            # What the middleware would do first: an https redirect, a refused user agent or host, a www.
            # redirect; any of them, and Django answers.
            if any(hasattr(m, "process_request") and m.process_request(request) is not None
                   for m in self.middleware):
                return None
            response = SubjectFeedView().from_probe(request, subject_id, request.GET.get("token"))
        except Exception:  # Django's own cycle answers it, and logs it as it would
            return None
        if response is None:
            return None
        for middleware in reversed(self.middleware):  # the order Django runs them on the way out
            response = middleware.process_response(request, response)
        response._resource_closers.append(request.close)
        response._handler_class = WSGIHandler  # request_finished, when the server closes it, as Django's
        start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
        return response


application = FeedPolls(django_application)
