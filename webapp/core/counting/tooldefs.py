"""Tool definitions as the model reads them.

OpenAI does not send a model the JSON schema of a tool: it rewrites the definitions as
TypeScript-like declarations in a `namespace functions { ... }` block, and bills the tokens of
that text. The layout below is the one the token-counting libraries inferred by comparing
counts with the API (hmarr/openai-chat-tokens for gpt-3.5-turbo), extended where the
calibration fixture showed more (titles, defaults, $ref, descriptions at every depth for the
o200k models). docs/counting.md says which request showed what.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 8  # a self-referencing $ref stops here instead of looping


def namespace_text(tools: list[dict], nested_descriptions: bool) -> str:
    lines = ["namespace functions {", ""]
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        if not isinstance(function, dict):
            continue
        lines += comment_lines(function.get("description"))
        parameters = function.get("parameters")
        parameters = parameters if isinstance(parameters, dict) else {}
        name = function.get("name", "")
        if parameters.get("properties"):
            schema = _Schema(parameters, nested_descriptions)
            lines += [f"type {name} = (_: {{", schema.properties(parameters, 0, 0), "}) => any;"]
        else:
            lines.append(f"type {name} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def comment_lines(text: Any) -> list[str]:
    """A description as the model reads it: one `//` line per non-blank line, trimmed."""
    if not text:
        return []
    return [f"// {line.strip()}" for line in str(text).splitlines() if line.strip()]


class _Schema:
    def __init__(self, root: dict, nested_descriptions: bool):
        self.definitions = {**(root.get("definitions") or {}), **(root.get("$defs") or {})}
        self.nested_descriptions = nested_descriptions

    def resolve(self, spec: Any) -> dict:
        if not isinstance(spec, dict):
            return {}
        ref = spec.get("$ref")
        if isinstance(ref, str):
            target = self.definitions.get(ref.rsplit("/", 1)[-1])
            if isinstance(target, dict):
                return {**target, **{k: v for k, v in spec.items() if k != "$ref"}}
        return spec

    def properties(self, obj: dict, indent: int, depth: int) -> str:
        required = obj.get("required") or []
        lines = []
        properties = obj.get("properties")
        for key, spec in (properties if isinstance(properties, dict) else {}).items():
            spec = self.resolve(spec)
            if spec.get("title"):
                lines.append(f"// {spec['title']}")
            if spec.get("description") and (indent < 2 or self.nested_descriptions):
                lines += comment_lines(spec["description"])
            line = f"{key}{'' if key in required else '?'}: {self.type(spec, indent, depth)},"
            if "default" in spec:
                line += f" // default: {json.dumps(spec['default'])}"
            lines.append(line)
        return "\n".join(" " * indent + line for line in lines)

    def type(self, spec: Any, indent: int, depth: int) -> str:
        spec = self.resolve(spec)
        if depth > MAX_DEPTH:
            return "any"
        variants = spec.get("anyOf") or spec.get("oneOf")
        if isinstance(variants, list):
            return " | ".join(self.type(v, indent, depth + 1) for v in variants)
        if "const" in spec and "type" not in spec:  # with a type, the type is shown (hmarr)
            return json.dumps(spec["const"])
        if isinstance(spec.get("enum"), list):
            return " | ".join(json.dumps(v) for v in spec["enum"])
        kind = spec.get("type")
        if isinstance(kind, list):
            return " | ".join(self.type({**spec, "type": k}, indent, depth + 1) for k in kind)
        if kind == "array":
            return f"{self.type(spec['items'], indent, depth + 1)}[]" if "items" in spec else "any[]"
        if kind == "object" or "properties" in spec:
            if not spec.get("properties"):
                return "object"
            return "{\n" + self.properties(spec, indent + 2, depth + 1) + "\n" + " " * indent + "}"
        if kind == "integer":
            return "number"
        return kind if kind in {"string", "number", "boolean", "null"} else "any"
