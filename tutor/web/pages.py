"""The reference student client at ``/`` and its session sign-in.

The page is a shell: all it shows comes from the API after it loads -- the
chat from the session's messages, the review from the submissions API, what
the tutor knew from each reply's ``context_meta`` -- so a reload loses nothing
and the page keeps no history of its own (SPEC §4: server-side history is
the only truth).
"""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_safe


@require_safe
@ensure_csrf_cookie
def client(request):
    """The client page. The CSRF cookie is set here because a session-signed-in
    page writes to the API, and DRF's SessionAuthentication checks CSRF on
    every unsafe request."""
    return render(request, "tutor/client.html")


class SessionLoginView(auth_views.LoginView):
    """Username and password into a Django session, then back to the client
    (``next`` is honoured only for this host, by Django's own check)."""

    template_name = "tutor/login.html"
    next_page = "client"


class SessionLogoutView(auth_views.LogoutView):
    next_page = "client"
