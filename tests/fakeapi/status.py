"""`Status` error bodies with the real API server's codes, reasons and wording.

Messages follow k8s.io/apimachinery pkg/api/errors/errors.go (NewNotFound, NewForbidden,
NewMethodNotSupported, NewTooManyRequests, NewInternalError, NewResourceExpired) and
k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go (forbiddenMessage); the expired
continue message is apiserver pkg/storage/etcd3/errors.go `inconsistentContinue`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .codec import dumps


@dataclass(frozen=True)
class ApiError(Exception):
    """A failed request, answered as a `Status` object."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    list_continue: str = ""
    extra_metadata: dict[str, Any] = field(default_factory=dict)

    def body(self) -> bytes:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {"continue": self.list_continue} if self.list_continue else {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            status["details"] = self.details
        status["code"] = self.code
        return dumps(status)


def _details(group: str, resource: str, name: str = "") -> dict[str, Any]:
    # Go's omitempty: empty name/group are left out, kind is the plural resource name.
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def qualified(group: str, resource: str) -> str:
    """schema.GroupResource.String(): `pods`, `deployments.apps`."""
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{qualified(group, resource)} "{name}" not found',
                    _details(group, resource, name))


def path_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def forbidden(user: str, verb: str, group: str, resource: str, namespace: str,
              name: str = "", subresource: str = "") -> ApiError:
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    full = f"{resource}/{subresource}" if subresource else resource
    reason = f'User "{user}" cannot {verb} resource "{full}" in API group "{group}" {scope}'

    subject = qualified(group, resource) + (f' "{name}"' if name else "")
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {reason}",
                    _details(group, resource, name))


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def method_not_supported(verb: str, group: str, resource: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed",
                    f'{verb} is not supported on resources of kind "{qualified(group, resource)}"',
                    _details(group, resource))


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list.")


def continue_expired(inconsistent_token: str) -> ApiError:
    return ApiError(410, "Expired", CONTINUE_EXPIRED, list_continue=inconsistent_token)


def injected(code: int, retry_after: int | None) -> ApiError:
    """An error from the state's `faults.errors`: throttling, overload or a server bug."""
    headers: tuple[tuple[str, str], ...] = ()
    if retry_after is not None:
        headers = (("Retry-After", str(retry_after)),)
    if code == 429:  # priority and fairness always says when to come back
        seconds = 1 if retry_after is None else retry_after
        return ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                        {"retryAfterSeconds": seconds}, (("Retry-After", str(seconds)),))
    if code == 503:
        return ApiError(503, "ServiceUnavailable",
                        "the server is currently unable to handle the request",
                        {"retryAfterSeconds": retry_after} if retry_after else None, headers)
    if code == 500:
        return ApiError(500, "InternalError", "Internal error occurred: injected fault",
                        {"causes": [{"message": "injected fault"}]}, headers)
    return ApiError(code, "Unknown", f"injected fault (HTTP {code})", None, headers)
