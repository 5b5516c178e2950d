from django.contrib import admin
from django.urls import include, path
from django.views.i18n import set_language
from rest_framework.routers import DefaultRouter

from corrections import api as corrections_api
from feedback import api as feedback_api
from lessons import urls as lessons_urls
from tutor import views
from tutor.chat import views as session_views
from tutor.ops import monitoring
from tutor.rights import views as rights_views
from tutor.web import (
    converters,  # noqa: F401  (registers the public_id path converter)
    pages,
    schema_views,
    signin,
)

router = DefaultRouter(trailing_slash=True, use_regex_path=False)
router.include_root_view = False
# One URL per resource: format suffixes (".json") would add routes the views do not expect.
router.include_format_suffixes = False
router.register("courses", views.CourseViewSet, basename="course")
router.register("tasks", views.TaskViewSet, basename="task")
router.register("submissions", feedback_api.SubmissionViewSet, basename="submission")
router.register("review-attempts", feedback_api.ReviewAttemptViewSet, basename="review-attempt")
# corrections (SPEC §5, §7)
router.register("memory", corrections_api.MemoryViewSet, basename="memory")
router.register("corrections", corrections_api.CorrectionViewSet, basename="correction")
router.register("correction-cases", corrections_api.CorrectionCaseViewSet, basename="correction-case")
lessons_urls.register(router)

# The admin's sign-in counts failures and locks out (tutor.web.signin); its
# route comes before the admin's own, which it wraps.
admin.site.login_form = signin.GuardedAdminAuthenticationForm

urlpatterns = [
    path("admin/login/", signin.admin_login),
    path("admin/", admin.site.urls),
    # The desk's language switch (a cookie the admin's locale middleware reads).
    path("i18n/setlang/", set_language, name="set_language"),
    path("healthz", views.healthz, name="healthz"),
    # Prometheus' scrape (tutor.ops.monitoring): 404 unless METRICS_ENABLED; not in the API's schema.
    path("metrics", monitoring.metrics_view, name="metrics"),
    path("api/schema/", schema_views.SchemaView.as_view(), name="schema"),
    path("api/docs/", schema_views.DocsView.as_view(url_name="schema"), name="docs"),
    path("api/tutor/sessions/", session_views.SessionOpenView.as_view(), name="tutor-sessions"),
    path(
        "api/tutor/sessions/<public_id:session_id>/messages/",
        session_views.SessionMessagesView.as_view(),
        name="tutor-session-messages",
    ),
    path("api/tutor/context/", session_views.ContextView.as_view(), name="tutor-context"),
    path(
        "api/tasks/<public_id:task_id>/review-agreement/",
        feedback_api.ReviewAgreementView.as_view(),
        name="task-review-agreement",
    ),
    path("api/me/", views.MeView.as_view(), name="me"),
    # --- data rights (SPEC §13) ---
    path("api/me/export/", rights_views.ExportView.as_view(), name="me-export"),
    path(
        "api/courses/<public_id:course_id>/ai-notice/",
        rights_views.NoticeView.as_view(),
        name="course-ai-notice",
    ),
    path("api/", include(router.urls)),
    # --- the reference student client (templates + static JS, no build step) ---
    path("", pages.client, name="client"),
    path("login/", pages.SessionLoginView.as_view(), name="session-login"),
    path("logout/", pages.SessionLogoutView.as_view(), name="session-logout"),
    # --- LMS integration (LTI 1.3) ---
    path("lti/", include("tutor.lti.urls")),
]

handler400 = "tutor.web.handlers.bad_request"
handler404 = "tutor.web.handlers.not_found"
handler500 = "tutor.web.handlers.server_error"
