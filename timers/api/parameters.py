"""What a request may name, checked once for every API view before it runs: Stripe's ``parameter_unknown``.

An endpoint takes the body fields and the query parameters its OpenAPI operation declares, and nothing else:
a name it does not know (``jitter`` on a schedule, ``limt`` on a list) is ``400 parameter_unknown`` naming the
first one, rather than silently ignored, so a typo never reads as a default. An endpoint that takes no body
refuses one (an empty body or ``{}`` is no body). What an operation declares is read from its own
``@extend_schema`` (the request serializer, the query serializers and parameters), the same source
``/openapi.json`` is made from, so the check and the schema cannot disagree.

A path id with a NUL (``/calendars/cal_%00``) names no object: a 404 like any unknown id, before a view
hands it to a database that stores no NUL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.http import QueryDict
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.exceptions import NotFound

from ..errors import KeepingTimeError

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView


@dataclass(frozen=True)
class Accepted:
    body: frozenset[str] | None  # None: the endpoint takes no body
    query: frozenset[str]


_accepted: dict[tuple[type, str], Accepted] = {}


def _fields(serializer: Any) -> frozenset[str]:
    if isinstance(serializer, type) and issubclass(serializer, serializers.BaseSerializer):
        serializer = serializer()
    fields = getattr(serializer, "fields", None)
    return frozenset(fields.keys()) if fields is not None else frozenset()


def _declared(view: APIView, method: str) -> Accepted:
    handler = getattr(type(view), method.lower(), None)
    schema_class = getattr(handler, "kwargs", {}).get("schema")
    if schema_class is None:  # no @extend_schema: the endpoint declares nothing it takes
        return Accepted(body=None, query=frozenset())
    schema = schema_class()
    schema.view = view  # drf-spectacular reads the view's request and kwargs to pick the method's declaration
    schema.method = method
    # A GET or a DELETE takes no body (drf-spectacular would guess at one, and say it cannot).
    request_serializer = schema.get_request_serializer() if method in ("POST", "PUT", "PATCH") else None
    query: set[str] = set()
    for parameter in schema.get_override_parameters():
        if isinstance(parameter, OpenApiParameter):
            if parameter.location == OpenApiParameter.QUERY:
                query.add(parameter.name)
        else:
            query |= _fields(parameter)
    body = _fields(request_serializer) if request_serializer is not None else None
    return Accepted(body=body, query=frozenset(query))


def accepted(view: APIView, method: str) -> Accepted:
    key = (type(view), method)
    found = _accepted.get(key)
    if found is None:
        found = _accepted[key] = _declared(view, method)
    return found


def _unknown(name: str, *, where: str) -> KeepingTimeError:
    err = KeepingTimeError(f"Received unknown parameter: {name} (in the {where}); see /docs for what this "
                           "endpoint takes", code="parameter_unknown")
    err.param = name
    return err


def _duplicated(name: str, *, where: str) -> KeepingTimeError:
    err = KeepingTimeError(f"the parameter {name!r} appears more than once in the {where}; send it once",
                           code="parameter_duplicated")
    err.param = name
    return err


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: an object that names a key twice is refused, never read as its last value
    (another parser would read the first, and two readers of one body would disagree)."""
    seen: dict[str, Any] = {}
    for name, value in pairs:
        if name in seen:
            raise _duplicated(name, where="JSON body")
        seen[name] = value
    return seen


def _handled(view: APIView, method: str) -> bool:
    """Whether the view answers ``method`` itself (else DRF answers 405 first, or OPTIONS its own way)."""
    name = method.lower()
    return name != "options" and name in view.http_method_names and getattr(view, name, None) is not None


def check_path_ids(view: APIView, request: Request, kwargs: Mapping[str, Any]) -> None:
    if not _handled(view, "GET" if request.method == "HEAD" else (request.method or "GET")):
        return  # 405 first, as for any id
    for value in kwargs.values():
        if isinstance(value, str) and "\x00" in value:
            raise NotFound("no such resource")


def check(view: APIView, request: Request) -> None:
    """Refuse (400) a query parameter or a body field the operation does not declare, and a body where it
    takes none."""
    method = "GET" if request.method == "HEAD" else (request.method or "GET")
    if not _handled(view, method):
        return  # DRF's own answer (OPTIONS, or 405 for a method the view has not)
    taken = accepted(view, method)
    params: QueryDict = request.query_params
    for name in params:
        if name not in taken.query:
            raise _unknown(name, where="query string")
        if len(params.getlist(name)) > 1:
            raise _duplicated(name, where="query string")
    raw = request._request.body
    if taken.body is None:
        if not raw.strip():
            return
        if not request.content_type:
            raise KeepingTimeError(f"{method} {request.path} takes no body", code="parameter_unknown")
    data = request.data
    if isinstance(data, Mapping):
        for name in data:
            if taken.body is None or name not in taken.body:
                raise _unknown(name, where="body")
            if isinstance(data, QueryDict) and len(data.getlist(name)) > 1:
                raise _duplicated(name, where="form body")
    elif taken.body is None:
        raise KeepingTimeError(f"{method} {request.path} takes no body", code="parameter_unknown")


def openapi_no_other_parameters(result: dict[str, Any], generator: Any, request: Any,
                                public: bool) -> dict[str, Any]:
    """drf-spectacular's postprocessing hook: a request body takes its properties and no other
    (additionalProperties: false), as the API refuses any other with 400 parameter_unknown."""
    components = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for media in operation.get("requestBody", {}).get("content", {}).values():
                schema = media.get("schema", {})
                ref = schema.get("$ref", "")
                if ref.startswith("#/components/schemas/"):
                    schema = components.get(ref.rsplit("/", 1)[1], {})
                if "properties" in schema:
                    schema.setdefault("additionalProperties", False)
    return result
