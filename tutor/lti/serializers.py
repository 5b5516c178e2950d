"""Shapes of the LTI endpoints for the OpenAPI schema (SPEC §7, §12)."""

from rest_framework import serializers


class LoginFormSerializer(serializers.Serializer):
    iss = serializers.CharField(help_text="the platform's issuer")
    login_hint = serializers.CharField()
    target_link_uri = serializers.CharField(required=False)
    client_id = serializers.CharField(
        required=False, help_text="needed when the issuer has several registrations"
    )
    lti_message_hint = serializers.CharField(required=False)
    lti_deployment_id = serializers.CharField(required=False)
    lti1p3_new_window = serializers.CharField(required=False, help_text="set by the cookie check page")


class LaunchFormSerializer(serializers.Serializer):
    id_token = serializers.CharField(help_text="the platform's signed id_token (a JWT)")
    state = serializers.CharField(help_text="the state the tool sent with the login redirect")


class JwkSerializer(serializers.Serializer):
    kty = serializers.CharField()
    kid = serializers.CharField()
    n = serializers.CharField()
    e = serializers.CharField()
    alg = serializers.CharField()
    use = serializers.CharField()


class JwksSerializer(serializers.Serializer):
    keys = JwkSerializer(many=True)
