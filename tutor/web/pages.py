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

from tutor.web.signin import GuardedAuthenticationForm, locked_out_status


@require_safe
@ensure_csrf_cookie
def client(request):
    """The client page. The CSRF cookie is set here because a session-signed-in
    page writes to the API, and DRF's SessionAuthentication checks CSRF on
    every unsafe request."""
    return render(request, "tutor/client.html")


class SessionLoginView(auth_views.LoginView):
    """Username and password into a Django session, then back to the client
    (``next`` is honoured only for this host, by Django's own check).
    Failed tries are counted and locked out (``tutor.web.signin``): 429."""

    template_name = "tutor/login.html"
    next_page = "client"
    authentication_form = GuardedAuthenticationForm

    def form_invalid(self, form):
        response = super().form_invalid(form)
        response.context_data["locked_out"] = form.has_error("__all__", "locked_out")
        return locked_out_status(self.request, response)


class SessionLogoutView(auth_views.LogoutView):
    next_page = "client"
