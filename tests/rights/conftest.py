from tests.lti.conftest import browser, platform, registration, tool_key  # noqa: F401
