"""Shapes of the LTI endpoints for the OpenAPI schema (SPEC §7, §12)."""

from rest_framework import serializers


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
