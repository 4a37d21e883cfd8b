"""The byte strings a document must contain to be parsed at all: one place for audit and convert.

Most files in a real tree have nothing to do with GPUs; looking for a few needles in the raw
bytes first keeps a 10,000-file tree close to grep's speed. Audit's list is deliberately broad
(`gpu` covers amd.com/gpu, gpu.intel.com/ and gpudra.io/): every rule can react only to text
that contains one of them, and each rule checks exactly after parsing. Convert acts on less:
NVIDIA device-plugin resources, the NVIDIA_VISIBLE_DEVICES variable it removes, existing DRA
objects (whose names it must not hand out again, and which it repairs) and pods' resourceClaims
(whose removed `source:` form it repairs); each of its needles contains an audit needle, so
convert never reads a document audit would skip.
"""

from __future__ import annotations

AUDIT_NEEDLES: tuple[bytes, ...] = (b"nvidia", b"NVIDIA_", b"resource.k8s.io", b"resourceClaim",
                                    b"gpu")
CONVERT_NEEDLES: tuple[str, ...] = ("nvidia.com/", "NVIDIA_VISIBLE_DEVICES", "resource.k8s.io",
                                    "resourceClaims")
CONVERT_BYTE_NEEDLES: tuple[bytes, ...] = tuple(n.encode() for n in CONVERT_NEEDLES)


def might_matter(data: bytes, needles: tuple[bytes, ...] = AUDIT_NEEDLES) -> bool:
    return any(n in data for n in needles)
