"""Image tokens by OpenAI's published rule, from the size an inline image declares in its header.

The rule (OpenAI's vision guide, "Calculating costs") depends on the model family:
- tiles (gpt-4o, gpt-4.1, gpt-4-turbo, o1, o3, and gpt-4o-mini with its own, far larger
  figures): at detail "low" an image costs a fixed base; otherwise it is scaled to fit in
  2048 x 2048, then so that its shortest side is at most 768, and it costs the base plus a
  figure per 512-pixel tile;
- patches (gpt-4.1-mini, gpt-4.1-nano, o4-mini): the image costs its 32-pixel patches (at most
  1536, scaling it down to fit), times a multiplier.
"auto" is counted as "high", which is what the API reported for every image of the
calibration fixture.

The sizes come from Pillow, which reads them from the PNG, JPEG, GIF or WebP header without
decoding a pixel. A remote image (an https URL) cannot be read here, since the playground
never goes on the web: it is counted under REMOTE_IMAGE_SIZE and marked as estimated.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# A remote image is counted as if it were this size: a web photo's usual 3:2 size, 2 tiles at
# detail high (the remote photos of the calibration fixture cost 2 tiles each).
REMOTE_IMAGE_SIZE = (768, 512)
FIT_SIDE, SHORT_SIDE, TILE = 2048, 768, 512


@dataclass(frozen=True)
class ImageRate:
    """Tokens of one image for a model family: `base` always, `tile` per 512-px tile; or, when
    `per_patch` is set, that many per 32-px patch."""

    base: int = 0
    tile: int = 0
    per_patch: float = 0.0


PATCH, MAX_PATCHES = 32, 1536
TILE_RATES = {"gpt-4o-mini": ImageRate(2833, 5667), "o1": ImageRate(75, 150), "o3": ImageRate(75, 150)}
PATCH_RATES = {"gpt-4.1-mini": 1.62, "gpt-4.1-nano": 2.46, "o4-mini": 1.72}
DEFAULT_RATE = ImageRate(85, 170)  # gpt-4o, gpt-4.1, gpt-4.5, gpt-4-turbo


def image_rate(model: str) -> ImageRate:
    """The image figures of a model, by the longest family name its name starts with."""
    for family, multiplier in PATCH_RATES.items():
        if model.startswith(family):
            return ImageRate(per_patch=multiplier)
    for family, rate in TILE_RATES.items():
        if model.startswith(family) and not model.startswith(("o1-mini", "o3-mini")):
            return rate
    return DEFAULT_RATE


@dataclass(frozen=True)
class ImageCount:
    tokens: int
    estimated: bool  # the size was assumed, not read


def image_parts(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(url, detail) of each image part of a message's content."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    out = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image_url":
            image = part.get("image_url")
            image = image if isinstance(image, dict) else {"url": image}
            out.append((str(image.get("url") or ""), str(image.get("detail") or "auto")))
    return out


@lru_cache(maxsize=64)
def inline_image_size(url: str) -> tuple[int, int] | None:
    """(width, height) of a data: URL image, from its header; None if it is not one we can read."""
    if not url.startswith("data:"):
        return None
    header, _, payload = url.partition(",")
    if not header.endswith(";base64"):
        return None
    try:
        data = base64.b64decode(payload, validate=False)
    except (binascii.Error, ValueError):
        return None
    from PIL import Image, UnidentifiedImageError  # here: most chats hold no image, and PIL is slow to import

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=("PNG", "JPEG", "GIF", "WEBP")) as image:
                return image.size
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, SyntaxError):
        return None


def tiles(width: int, height: int) -> int:
    """512-px tiles of an image at detail high, after the two scalings."""
    if width <= 0 or height <= 0:
        return 0
    scale = min(1.0, FIT_SIDE / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, SHORT_SIDE / min(width, height))
    width, height = width * scale, height * scale
    return math.ceil(width / TILE) * math.ceil(height / TILE)


def patches(width: int, height: int) -> int:
    """32-px patches of an image, scaled down to at most MAX_PATCHES."""
    if width <= 0 or height <= 0:
        return 0
    count = math.ceil(width / PATCH) * math.ceil(height / PATCH)
    if count <= MAX_PATCHES:
        return count
    shrink = math.sqrt(PATCH * PATCH * MAX_PATCHES / (width * height))
    # Shrink a little more so that a whole number of patches fits across the width or the height.
    shrink *= min(math.floor(width * shrink / PATCH) / (width * shrink / PATCH), math.floor(height * shrink / PATCH) / (height * shrink / PATCH))
    return min(MAX_PATCHES, math.ceil(width * shrink / PATCH) * math.ceil(height * shrink / PATCH))


def image_tokens(url: str, detail: str, rate: ImageRate) -> ImageCount:
    if detail == "low" and not rate.per_patch:
        return ImageCount(rate.base, estimated=False)
    size = inline_image_size(url)
    estimated = size is None
    width, height = size or REMOTE_IMAGE_SIZE
    if rate.per_patch:
        # round() first: 300 patches x 1.62 is 486.00000000000006 in floating point.
        return ImageCount(math.ceil(round(patches(width, height) * rate.per_patch, 6)), estimated)
    return ImageCount(rate.base + rate.tile * tiles(width, height), estimated)
