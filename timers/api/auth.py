from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission


class SecretKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        return None


class HasBrand(BasePermission):
    def has_permission(self, request, view):
        return False
