"""Write ``keeping_time_client/_generated.py`` from the API's OpenAPI schema: one typed method per operation.

    python -m keeping_time_client.generate                  # the schema of this checkout (Django in-process)
    python -m keeping_time_client.generate --url http://127.0.0.1:8000/openapi.json
    python -m keeping_time_client.generate --check          # exit 1 if the committed file differs

``scripts/gen_client`` runs the first. tests/project/test_client.py regenerates from a live server's /openapi.json and
fails on any difference, so an endpoint added without rerunning this cannot land.

Each operation becomes ``<resource>.<name>``: the resource is the path's first segment (``/test_clocks/…`` is
``test_clocks``), the name the operationId without that prefix (``test_clocks_advance`` is ``advance``).
Path parameters are positional; query parameters and body fields are keyword-only, optional ones defaulting
to OMIT (not sent). Component schemas become TypedDicts (responses) and Literals (enums).
"""

from __future__ import annotations

import argparse
import json
import keyword
import os
import sys
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).with_name("_generated.py")
COMMAND = "python -m keeping_time_client.generate"
SUCCESS = ("200", "201", "202")
HEADER_PARAMS = {"Idempotency-Key": "idempotency_key"}
MAX_LITERAL = 40  # an enum with more values is typed by its base type (str), not as a Literal


class SchemaError(Exception):
    """The schema has something the generator cannot turn into a method; the message says what to fix."""


def _ident(name: str) -> str:
    return f"{name}_" if keyword.iskeyword(name) or name in ("self",) else name


def _camel(snake: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[1]


class Types:
    """OpenAPI schemas as Python annotations."""

    def __init__(self, components: dict[str, Any]):
        self.components = components

    def of(self, schema: dict[str, Any] | None, *, for_input: bool = False, in_class: bool = False) -> str:
        """The annotation for ``schema``; ``in_class`` where ``list`` would name a method (a resource's)."""
        if not schema:
            return "Any"
        t = self._bare(schema, for_input=for_input, in_class=in_class)
        if schema.get("nullable") and t != "Any" and not t.endswith("| None"):
            t = f"{t} | None"
        return t

    def _bare(self, schema: dict[str, Any], *, for_input: bool, in_class: bool) -> str:
        lst = "builtins.list" if in_class else "list"
        if "$ref" in schema:
            return _ref_name(schema["$ref"])
        for combo in ("allOf", "oneOf", "anyOf"):
            if combo in schema:
                parts: list[str] = []
                for sub in schema[combo]:
                    for p in self.of(sub, for_input=for_input, in_class=in_class).split(" | "):
                        if p not in parts:
                            parts.append(p)
                if combo == "allOf" and len(schema[combo]) > 1:
                    return "dict[str, Any]"  # an intersection Python's types cannot say
                return " | ".join(parts) if parts else "Any"
        if "enum" in schema:
            values = [v for v in schema["enum"] if v is not None]
            if len(values) > MAX_LITERAL:
                # Zones and holiday regions: lists the server's installed tzdata and holidays hold, which
                # differ between machines and releases; naming them would make the client drift with neither.
                return {"integer": "int", "number": "float", "boolean": "bool"}.get(schema.get("type"), "str")
            lit = f"Literal[{', '.join(repr(v) for v in values)}]" if values else "None"
            return f"{lit} | None" if None in schema["enum"] and values else lit
        kind = schema.get("type")
        fmt = schema.get("format")
        if kind == "string":
            if for_input and fmt == "date-time":
                return "str | datetime"
            if for_input and fmt == "date":
                return "str | date"
            if for_input and fmt == "decimal":
                return "str | Decimal"
            return "str"
        if kind == "integer":
            return "int"
        if kind == "number":
            return "float | Decimal" if for_input else "float"
        if kind == "boolean":
            return "bool"
        if kind == "array":
            return f"{lst}[{self.of(schema.get('items'), for_input=for_input, in_class=in_class)}]"
        if kind == "object" or "properties" in schema or "additionalProperties" in schema:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra and "properties" not in schema:
                return f"dict[str, {self.of(extra, for_input=for_input, in_class=in_class)}]"
            return "dict[str, Any]"
        return "Any"

    def component(self, name: str) -> str:
        schema = self.components[name]
        if "enum" in schema:
            return f"{name} = {self._bare(schema, for_input=False, in_class=False)}\n"
        props: dict[str, Any] = schema.get("properties") or {}
        if schema.get("type") != "object" and not props:
            return f"{name} = {self.of(schema)}\n"
        required = set(schema.get("required") or [])
        fields = []
        for field, sub in props.items():
            t = self.of(sub)
            fields.append((field, t if field in required else f"NotRequired[{t}]", sub.get("description")))
        doc = schema.get("description")
        if any(not f.isidentifier() or keyword.iskeyword(f) for f, _, _ in fields):
            # A field named like a keyword ("from"): only the functional form can hold it.
            body = "".join(f"    {f!r}: {t},\n" for f, t, _ in fields)
            return f"{name} = TypedDict({name!r}, {{\n{body}}})\n"
        lines = [f"class {name}(TypedDict):\n"]
        if doc:
            lines.append(f"    {_docstring(doc, 4)}\n")
        if not fields:
            lines.append("    pass\n")
        for field, t, _ in fields:
            lines.append(f"    {field}: {t}\n")
        return "".join(lines)


def _docstring(text: str, indent: int) -> str:
    text = " ".join(text.split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text += " "
    return f'"""{text}"""'


class Operation:
    def __init__(self, method: str, path: str, op: dict[str, Any], types: Types):
        self.method, self.path, self.op, self.types = method.upper(), path, op, types
        self.op_id = op.get("operationId") or ""
        segment = path.strip("/").split("/", 1)[0]
        self.resource = segment
        if not self.op_id.startswith(f"{segment}_"):
            raise SchemaError(f"{self.method} {path}: operationId {self.op_id!r} does not start with "
                              f"{segment + '_'!r}, the resource its path names; give the view "
                              f"@extend_schema(operation_id='{segment}_<verb>')")
        self.name = _ident(self.op_id[len(segment) + 1:])

    def _body_schema(self) -> dict[str, Any] | None:
        content = (self.op.get("requestBody") or {}).get("content") or {}
        media = content.get("application/json") or next(iter(content.values()), None)
        if not media:
            return None
        schema = media.get("schema") or {}
        if "$ref" in schema:
            return self.types.components[_ref_name(schema["$ref"])]
        return schema

    def _returns(self) -> str:
        for status in SUCCESS:
            answer = (self.op.get("responses") or {}).get(status)
            if answer:
                media = (answer.get("content") or {}).get("application/json")
                return self.types.of(media.get("schema")) if media else "Any"
        return "Any"

    def render(self) -> tuple[str, tuple[str, str, str, str]]:
        params = self.op.get("parameters") or []
        positional: list[tuple[str, str]] = []
        required_kw: list[str] = []
        optional_kw: list[str] = []
        query: list[tuple[str, str]] = []
        body: list[tuple[str, str]] = []
        taken: set[str] = set()
        header_arg = None

        def take(py: str, where: str) -> str:
            if py in taken:
                raise SchemaError(f"{self.op_id}: {where} {py!r} is named twice (a path, query or body name "
                                  "must be unique to one operation)")
            taken.add(py)
            return py

        for p in params:
            py_t = self.types.of(p.get("schema"), for_input=True, in_class=True)
            if p["in"] == "path":
                positional.append((take(_ident(p["name"]), "path parameter"), py_t))
            elif p["in"] == "query":
                py = take(_ident(p["name"]), "query parameter")
                query.append((p["name"], py))
                if p.get("required"):
                    required_kw.append(f"{py}: {py_t}")
                else:
                    optional_kw.append(f"{py}: {py_t} | Omit = OMIT")
            elif p["in"] == "header" and p["name"] in HEADER_PARAMS:
                header_arg = take(HEADER_PARAMS[p["name"]], "header")
            else:
                raise SchemaError(f"{self.op_id}: a {p['in']} parameter {p['name']!r} the generator does not know")
        schema = self._body_schema()
        free_body = False
        if schema is not None:
            props = schema.get("properties") or {}
            required = set(schema.get("required") or [])
            if not props:
                free_body = True
                py = take("body", "body")
                if self.op.get("requestBody", {}).get("required"):
                    required_kw.append(f"{py}: dict[str, Any]")
                else:
                    optional_kw.append(f"{py}: dict[str, Any] | Omit = OMIT")
            for field, sub in props.items():
                if sub.get("readOnly"):
                    continue
                py = take(_ident(field), "body field")
                py_t = self.types.of(sub, for_input=True, in_class=True)
                body.append((field, py))
                if field in required:
                    required_kw.append(f"{py}: {py_t}")
                else:
                    optional_kw.append(f"{py}: {py_t} | Omit = OMIT")
        if header_arg:
            optional_kw.append(f"{header_arg}: str | Omit = OMIT")

        args = ["self", *(f"{n}: {t}" for n, t in positional)]
        if required_kw or optional_kw:
            args += ["*", *required_kw, *optional_kw]
        returns = self._returns()
        path_expr = self.path
        for name, _ in positional:
            raw = name[:-1] if name.endswith("_") and keyword.iskeyword(name[:-1]) else name
            path_expr = path_expr.replace(f"{{{raw}}}", f"{{_seg({name})}}")
        path_code = f'f"{path_expr}"' if positional else repr(path_expr)
        call = [repr(self.method), path_code]
        if query:
            call.append("params={" + ", ".join(f"{field!r}: {py}" for field, py in query) + "}")
        if free_body:
            call.append("json=None if body is OMIT else body")
        elif schema is not None:
            call.append("json={" + ", ".join(f"{field!r}: {py}" for field, py in body) + "}")
        if header_arg:
            call.append(f"idempotency_key={header_arg}")
        summary = self.op.get("summary") or self.op_id
        signature = f"    def {self.name}({', '.join(args)}) -> {returns}:\n"
        if len(signature) > 111:
            inner = "".join(f"        {a},\n" for a in args)
            signature = f"    def {self.name}(\n{inner}    ) -> {returns}:\n"
        text = (signature
                + f"        {_docstring(f'{summary}. {self.method} {self.path}', 8)}\n"
                + f"        return cast({returns!r}, self._client.request({', '.join(call)}))\n")
        return text, (self.method, self.path, self.resource, self.name)


def generate(schema: dict[str, Any]) -> str:
    """The module's text for ``schema`` (an OpenAPI 3 document)."""
    components = (schema.get("components") or {}).get("schemas") or {}
    types = Types(components)
    ops: list[Operation] = []
    for path, item in schema.get("paths", {}).items():
        for method, op in item.items():
            if method.lower() in ("get", "post", "put", "patch", "delete"):
                ops.append(Operation(method, path, op, types))
    by_resource: dict[str, list[Operation]] = {}
    for op in ops:
        by_resource.setdefault(op.resource, []).append(op)
    seen: dict[tuple[str, str], str] = {}
    for op in ops:
        where = (op.resource, op.name)
        if where in seen:
            raise SchemaError(f"{op.op_id} and {seen[where]} both make {op.resource}.{op.name}")
        seen[where] = op.op_id

    info = schema.get("info") or {}
    out = [
        f'"""The Keeping Time API, one method per operation: generated from /openapi.json '
        f'({info.get("title", "")} {info.get("version", "")}).\n\n'
        f"Do not edit: change the API, then run `{COMMAND}` (scripts/gen_client).\n"
        '"""\n\n',
        "# ruff: noqa: E501\n",
        "from __future__ import annotations\n\n",
        "import builtins\n",
        "from datetime import date, datetime\n",
        "from decimal import Decimal\n",
        "from typing import Any, Literal, NotRequired, TypedDict, cast\n",
        "from urllib.parse import quote\n\n",
        "from ._base import OMIT, KeepingTimeBase, Omit, Resource\n\n",
        "__all__ = [\"KeepingTime\", \"OPERATIONS\"]\n\n\n",
        "def _seg(value: str) -> str:\n",
        "    # An id goes into the path as one segment, whatever it holds ('/', '#', '?').\n",
        "    return quote(str(value), safe=\"\")\n\n\n",
        "_ = (builtins, date, datetime, Decimal, NotRequired)  # used by some generated signatures only\n\n\n",
        "# -- the API's objects --------------------------------------------------------------------------------\n",
    ]
    enums = sorted(n for n, s in components.items() if "enum" in s)
    dicts = sorted(n for n, s in components.items() if "enum" not in s)
    for name in enums:
        out.append(types.component(name))
    out.append("\n\n")
    for name in dicts:
        out.append(types.component(name))
        out.append("\n\n")
    out.append("# -- operations ---------------------------------------------------------------------------------------\n")
    table: dict[str, tuple[str, str, str, str]] = {}
    for resource in sorted(by_resource):
        out.append(f"class {_camel(resource)}(Resource):\n")
        out.append(f'    """{resource}: /{resource}…"""\n\n')
        methods = []
        for op in sorted(by_resource[resource], key=lambda o: o.name):
            text, row = op.render()
            methods.append(text)
            table[op.op_id] = row
        out.append("\n".join(methods))
        out.append("\n\n")
    out.append("class KeepingTime(KeepingTimeBase):\n")
    out.append('    """The client: ``KeepingTime(api_key, base_url=…)``, one attribute per resource."""\n\n')
    for resource in sorted(by_resource):
        out.append(f"    {resource}: {_camel(resource)}\n")
    out.append("\n    def __init__(self, api_key: str | None = None, **options: Any):\n")
    out.append("        super().__init__(api_key, **options)\n")
    for resource in sorted(by_resource):
        out.append(f"        self.{resource} = {_camel(resource)}(self)\n")
    out.append("\n\n# operationId: (method, path, resource, method name), for the test that compares it with /openapi.json.\n")
    out.append("OPERATIONS: dict[str, tuple[str, str, str, str]] = {\n")
    for op_id in sorted(table):
        out.append(f"    {op_id!r}: {table[op_id]!r},\n")
    out.append("}\n")
    return "".join(out)


def schema_in_process() -> dict[str, Any]:
    """The schema this checkout serves at /openapi.json, built without a server."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "keeping_time.settings")
    os.environ.setdefault("DEBUG", "1")  # the settings want a SECRET_KEY otherwise; nothing is served
    import django  # noqa: PLC0415 - the generator runs without Django until it builds the schema in process

    django.setup()
    from django.test import Client  # noqa: PLC0415 - only once the settings are loaded

    response = Client().get("/openapi.json", HTTP_HOST="127.0.0.1")
    if response.status_code != 200:
        raise SchemaError(f"/openapi.json answered {response.status_code}")
    return json.loads(response.content)


def schema_from_url(url: str) -> dict[str, Any]:
    import httpx  # noqa: PLC0415 - only a schema read from a server needs it

    response = httpx.get(url, timeout=30)
    response.raise_for_status()
    return response.json()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="read the schema from a server's /openapi.json")
    parser.add_argument("--schema", help="read the schema from a JSON file")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is not current")
    args = parser.parse_args(argv)
    try:
        if args.schema:
            schema = json.loads(Path(args.schema).read_text())
        elif args.url:
            schema = schema_from_url(args.url)
        else:
            schema = schema_in_process()
        text = generate(schema)
    except SchemaError as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 2
    current = OUTPUT.read_text() if OUTPUT.exists() else ""
    if args.check:
        if current != text:
            print(f"{OUTPUT} is not current: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    if current != text:
        OUTPUT.write_text(text)
        print(f"wrote {OUTPUT} ({text.count(chr(10))} lines)")
    else:
        print(f"{OUTPUT} is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
