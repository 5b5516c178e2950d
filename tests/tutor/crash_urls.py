"""The project's routes plus one that fails, for the error-report tests."""

import json

from django.urls import path

from tutor.urls import handler400, handler404, handler500, urlpatterns  # noqa: F401


def crash(request):
    json.loads(request.body)  # the view read what the student sent
    raise RuntimeError("the probe view failed")


urlpatterns = [path("crash/", crash), *urlpatterns]
