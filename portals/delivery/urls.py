"""The delivery portal's routes, under /portal/delivery/ (namespace ``delivery``)."""

from django.urls import path

from . import invites, views

app_name = "delivery"

urlpatterns = [
    path("login", views.SignIn.as_view(), name="login"),
    path("logout", views.SignOut.as_view(), name="logout"),
    # An invite's one-time link to choose a password (services.members.invite_link).
    path("welcome/<str:uidb64>/<str:token>", views.Welcome.as_view(), name="welcome"),
    # An invite's one-time link to accept it (services.members.member_invite); the token leaves the address at once.
    path("invite/accept", invites.invite_accept, name="invite-accept"),
    path("invite/<str:token>", invites.invite_link, name="invite"),
    path("", views.home, name="home"),
    path("tasks/<str:task_id>/history", views.task_history, name="task-history"),
    path("clocks/<str:clock_id>/<str:item>/history", views.date_history, name="date-history"),
    path("tasks/<str:task_id>/<str:act>", views.task_act, name="task-act"),
    path("clocks/<str:clock_id>/<str:item>/<str:act>", views.clock_act, name="clock-act"),
    path("subjects/<str:subject_id>/withdraw", views.withdraw, name="withdraw"),
    path("window/<str:act>", views.window_act, name="window-act"),
    path("zone", views.set_zone, name="zone"),
]
