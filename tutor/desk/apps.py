from django.contrib.admin.apps import AdminConfig


class DeskAdminConfig(AdminConfig):
    """Django's admin with the staff desk as its site (``tutor.desk.site``)."""

    default_site = "tutor.desk.site.DeskAdminSite"
