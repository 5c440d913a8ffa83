"""`pkc lsp` spoken to by a real LSP client (pygls): a kernel opened,
its diagnostics after an edit, hover, go to definition and a quick fix, with the
expected values derived by hand from the text below."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from conftest import clean_env, pkc_path

SRC = """kernel k<M = 256, bm = 128>(
    x: f32[M, 256] block [bm, 256] at (i, 0),
) -> y: f32[M, 256] block [bm, 256] at (i, 0)
grid (i in M / bm parallel)
{
    let v = x[..];
    y[..] = exp(v);
}
"""


async def with_server(tmp_path, body) -> None:
    """Starts `pkc lsp` with `tmp_path` as the workspace, initialises it,
    runs `body(client, init, diagnostics, tmp_path)` (`init` the server's
    answer to `initialize`, `diagnostics` a queue of what it publishes) and
    shuts the server down."""
    client = LanguageClient("pk-test", "1")
    diagnostics: asyncio.Queue = asyncio.Queue()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        diagnostics.put_nowait(params)

    await client.start_io(str(pkc_path()), "lsp", env=clean_env())
    try:
        init = await client.initialize_async(
            lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=tmp_path.as_uri())
        )
        client.initialized(lsp.InitializedParams())
        await body(client, init, diagnostics, tmp_path)
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()


def run_with_server(tmp_path, monkeypatch, body) -> None:
    if not pkc_path().exists():
        pytest.skip(f"no pkc at {pkc_path()}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    asyncio.run(asyncio.wait_for(with_server(tmp_path, body), 120))


async def session(client, init, diagnostics, tmp_path) -> None:
    path = tmp_path / "k.pk"
    path.write_text(SRC)
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="pk", version=1, text=SRC)
        )
    )
    first = await asyncio.wait_for(diagnostics.get(), 30)
    assert first.uri == uri and list(first.diagnostics) == []

    # Hover on `v` (line 5, column 8): a bm x 256 = 128 x 256 f32 tile.
    hover = await client.text_document_hover_async(
        lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=5, character=8)
        )
    )
    assert "f32[128, 256]" in hover.contents.value

    # `exp(v)` on line 6: `v` is declared on line 5, columns 8-9.
    loc = await client.text_document_definition_async(
        lsp.DefinitionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=6, character=16)
        )
    )
    loc = loc[0] if isinstance(loc, list) else loc
    assert loc.uri == uri
    assert (loc.range.start.line, loc.range.start.character, loc.range.end.character) == (5, 8, 9)

    # Misspell `v` as `vv` in `exp(v)`: PK0101 at line 6, columns 16-18.
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(
                        start=lsp.Position(line=6, character=16), end=lsp.Position(line=6, character=16)
                    ),
                    text="v",
                )
            ],
        )
    )
    second = await asyncio.wait_for(diagnostics.get(), 30)
    assert second.version == 2
    [d] = second.diagnostics
    assert d.code == "PK0101"
    assert (d.range.start.line, d.range.start.character, d.range.end.character) == (6, 16, 18)
    assert "unknown name `vv`" in d.message
    assert d.code_description is not None and d.code_description.href.endswith("PK0101.txt")

    # The quick fix for it: `vv` is one edit from `v`, the only name in
    # scope that close.
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=d.range,
            context=lsp.CodeActionContext(diagnostics=[d]),
        )
    )
    [fix] = actions
    assert fix.title == "replace with `v`"
    [edit] = fix.edit.changes[uri]
    assert (edit.range, edit.new_text) == (d.range, "v")


def test_lsp_diagnostics_hover_and_definition(tmp_path, monkeypatch) -> None:
    run_with_server(tmp_path, monkeypatch, session)


# A function and a kernel that calls it, for the requests an editor makes
# while it shows a file: semantic tokens, the outline and signature help.
OUTLINE_SRC = """fn scale(t, s) {
    t * s
}

kernel k<M = 256>(x: f32[M, 128]) -> y: f32[M, 128]
{
    y[..] = scale(x[..], 2.0);
}
"""


def absolute_tokens(data: list[int], legend: list[str]) -> list[tuple[int, int, int, str]]:
    """`(line, start, length, type)` of each token, from LSP's relative
    encoding: five integers per token, the line and start relative to the
    previous token's."""
    out = []
    line = start = 0
    for i in range(0, len(data), 5):
        dl, ds, length, kind, _ = data[i : i + 5]
        line += dl
        start = ds if dl else start + ds
        out.append((line, start, length, legend[kind]))
    return out


async def outline_session(client, init, diagnostics, tmp_path) -> None:
    legend = [str(t) for t in init.capabilities.semantic_tokens_provider.legend.token_types]
    path = tmp_path / "outline.pk"
    path.write_text(OUTLINE_SRC)
    uri = path.as_uri()
    doc = lsp.TextDocumentIdentifier(uri=uri)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="pk", version=1, text=OUTLINE_SRC)
        )
    )
    first = await asyncio.wait_for(diagnostics.get(), 30)
    assert list(first.diagnostics) == []

    tokens = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(text_document=doc))
    got = absolute_tokens(list(tokens.data), legend)
    # Counted by hand in the text above: (line, column, length, type).
    want = [
        (0, 0, 2, "keyword"),  # fn
        (0, 3, 5, "function"),  # scale
        (0, 9, 1, "variable"),  # t, a function parameter
        (0, 12, 1, "variable"),  # s
        (4, 0, 6, "keyword"),  # kernel
        (4, 7, 1, "function"),  # k
        (4, 9, 1, "parameter"),  # M
        (4, 13, 3, "number"),  # 256
        (4, 18, 1, "variable"),  # x, an operand
        (4, 21, 3, "type"),  # f32
        (4, 25, 1, "parameter"),  # M in x's shape
        (4, 28, 3, "number"),  # 128
        (4, 37, 1, "variable"),  # y
        (4, 40, 3, "type"),  # f32
        (6, 4, 1, "variable"),  # y
        (6, 12, 5, "function"),  # the call of scale
        (6, 18, 1, "variable"),  # x
        (6, 25, 3, "number"),  # 2.0
    ]
    for t in want:
        assert t in got, (t, got)
    # Tokens come in document order, each once.
    assert got == sorted(set(got))

    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=doc))
    outline = [(s.name, s.kind, [(c.name, c.kind) for c in s.children or []]) for s in symbols]
    assert outline == [
        (
            "scale",
            lsp.SymbolKind.Function,
            [("t", lsp.SymbolKind.Variable), ("s", lsp.SymbolKind.Variable)],
        ),
        (
            "k",
            lsp.SymbolKind.Function,
            [
                ("M", lsp.SymbolKind.TypeParameter),
                ("x", lsp.SymbolKind.Field),
                ("y", lsp.SymbolKind.Field),
            ],
        ),
    ]
    # `k`'s range runs from `kernel` (line 4) to its closing brace
    # (line 7); its name is the selection.
    k = symbols[1]
    assert (k.range.start.line, k.range.end.line) == (4, 7)
    sel = k.selection_range
    assert (sel.start.line, sel.start.character, sel.end.character) == (4, 7, 8)

    # In `scale(x[..], 2.0)` before `2.0`: the second argument, `s`.
    help = await client.text_document_signature_help_async(
        lsp.SignatureHelpParams(text_document=doc, position=lsp.Position(line=6, character=25))
    )
    [sig] = help.signatures
    assert sig.label == "scale(t, s)"
    assert [p.label for p in sig.parameters] == ["t", "s"]
    assert help.active_parameter == 1
    # Before `x`: the first.
    help = await client.text_document_signature_help_async(
        lsp.SignatureHelpParams(text_document=doc, position=lsp.Position(line=6, character=18))
    )
    assert help.active_parameter == 0


def test_lsp_semantic_tokens_outline_and_signature_help(tmp_path, monkeypatch) -> None:
    run_with_server(tmp_path, monkeypatch, outline_session)


# `lib::twice` used by an open document and by a file on disk.
LIB_SRC = "/// Twice `x`.\nfn twice(x) {\n    x + x\n}\n"
MAIN_SRC = "use lib;\n\nkernel k(x: f32[8, 128]) -> y: f32[8, 128]\n{\n    y[..] = lib::twice(x[..]);\n}\n"
OTHER_SRC = (
    "use lib;\n\nkernel o(x: f32[8, 128]) -> y: f32[8, 128]\n{\n"
    "    let t = lib::twice(x[..]);\n    y[..] = lib::twice(t);\n}\n"
)
STD_SRC = "use std::math;\n\nkernel s(x: f32[8, 128]) -> y: f32[8, 128]\n{\n    y[..] = math::softplus(x[..]);\n}\n"


async def references_session(client, init, diagnostics, tmp_path) -> None:
    files = {"lib.pk": LIB_SRC, "main.pk": MAIN_SRC, "other.pk": OTHER_SRC, "std_user.pk": STD_SRC}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    # main.pk and std_user.pk are open; lib.pk and other.pk only on disk.
    for name in ("main.pk", "std_user.pk"):
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri=(tmp_path / name).as_uri(), language_id="pk", version=1, text=files[name]
                )
            )
        )
        got = await asyncio.wait_for(diagnostics.get(), 30)
        assert list(got.diagnostics) == [], got

    def located(locs) -> set[tuple[str, int, int, int]]:
        return {
            (loc.uri.rsplit("/", 1)[1], loc.range.start.line, loc.range.start.character, loc.range.end.character)
            for loc in locs
        }

    # `twice` in `lib::twice(` of main.pk: line 4, columns 17-22.
    main = lsp.TextDocumentIdentifier(uri=(tmp_path / "main.pk").as_uri())
    locs = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=main,
            position=lsp.Position(line=4, character=18),
            context=lsp.ReferenceContext(include_declaration=True),
        )
    )
    assert located(locs) == {
        ("lib.pk", 1, 3, 8),  # fn twice(x)
        ("main.pk", 4, 17, 22),
        ("other.pk", 4, 17, 22),  # let t = lib::twice(x[..]);
        ("other.pk", 5, 17, 22),  # y[..] = lib::twice(t);
    }

    # `softplus` of std::math, from the other open document: its use
    # there; main.pk and the files on disk do not name it.
    std_doc = lsp.TextDocumentIdentifier(uri=(tmp_path / "std_user.pk").as_uri())
    locs = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=std_doc,
            position=lsp.Position(line=4, character=20),
            context=lsp.ReferenceContext(include_declaration=False),
        )
    )
    assert located(locs) == {("std_user.pk", 4, 18, 26)}


def test_lsp_references_across_files(tmp_path, monkeypatch) -> None:
    run_with_server(tmp_path, monkeypatch, references_session)
