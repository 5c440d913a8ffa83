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


async def session(tmp_path) -> None:
    client = LanguageClient("pk-test", "1")
    diagnostics: asyncio.Queue = asyncio.Queue()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        diagnostics.put_nowait(params)

    await client.start_io(str(pkc_path()), "lsp", env=clean_env())
    try:
        await client.initialize_async(
            lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=tmp_path.as_uri())
        )
        client.initialized(lsp.InitializedParams())
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
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()


def test_lsp_diagnostics_hover_and_definition(tmp_path, monkeypatch) -> None:
    if not pkc_path().exists():
        pytest.skip(f"no pkc at {pkc_path()}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    asyncio.run(asyncio.wait_for(session(tmp_path), 120))
