"""A subject's calendar feed as a calendar app fetches it."""

from __future__ import annotations


def ics(client, subject, token, **headers):
    return client.get(f"/subjects/{subject.id}/calendar.ics", {"token": token} if token is not None else {},
                      **headers)
