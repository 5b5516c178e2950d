from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from feedback import api as feedback_api
from lessons import urls as lessons_urls
from tutor import session_views, views

router = DefaultRouter(trailing_slash=True, use_regex_path=False)
router.include_root_view = False
# One URL per resource: format suffixes (".json") would add routes the views do not expect.
router.include_format_suffixes = False
router.register("courses", views.CourseViewSet, basename="course")
router.register("tasks", views.TaskViewSet, basename="task")
router.register("submissions", feedback_api.SubmissionViewSet, basename="submission")
router.register("review-attempts", feedback_api.ReviewAttemptViewSet, basename="review-attempt")
lessons_urls.register(router)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/tutor/sessions/", session_views.SessionOpenView.as_view(), name="tutor-sessions"),
    path(
        "api/tutor/sessions/<uuid:session_id>/messages/",
        session_views.SessionMessagesView.as_view(),
        name="tutor-session-messages",
    ),
    path("api/tutor/context/", session_views.ContextView.as_view(), name="tutor-context"),
    path("api/", include(router.urls)),
]

handler404 = "tutor.handlers.not_found"
handler500 = "tutor.handlers.server_error"
