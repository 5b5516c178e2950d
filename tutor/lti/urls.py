"""LTI endpoints (SPEC §12), with or without the trailing slash: platforms
are configured with exact URLs, and a POST must never be redirected. The
slash-less aliases answer the same and stay out of the schema."""

from django.urls import path

from tutor.lti import views


def _alias(view_class):
    return type(f"{view_class.__name__}Unslashed", (view_class,), {"schema": None}).as_view()


urlpatterns = [
    path("login/", views.LoginView.as_view(), name="lti-login"),
    path("launch/", views.LaunchView.as_view(), name="lti-launch"),
    path("jwks/", views.JwksView.as_view(), name="lti-jwks"),
    path("login", _alias(views.LoginView)),
    path("launch", _alias(views.LaunchView)),
    path("jwks", _alias(views.JwksView)),
]
