// The pk extension: `pkc fmt -` as the document formatter, and `pkc lsp` as
// the language server when the configured pkc has that command (older pkc
// builds do not: the extension then runs without one).
'use strict';

const vscode = require('vscode');
const { execFile, spawn } = require('child_process');

/** @type {import('vscode-languageclient/node').LanguageClient | undefined} */
let client;

function pkcPath() {
  return vscode.workspace.getConfiguration('pk').get('pkcPath') || 'pkc';
}

/** Resolves to whether `pkc lsp --help` runs (the command exists). */
function hasLsp(pkc) {
  return new Promise((resolve) => {
    execFile(pkc, ['lsp', '--help'], { timeout: 5000 }, (err) => resolve(!err));
  });
}

/** `pkc fmt -` on `text`: the formatted text, or an error message. */
function format(pkc, text) {
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = spawn(pkc, ['fmt', '-'], { env: { ...process.env, NO_COLOR: '1' } });
    } catch (e) {
      reject(e.message);
      return;
    }
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', (e) => reject(`cannot run ${pkc}: ${e.message}`));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(err.trim() || `pkc fmt exited with ${code}`)));
    child.stdin.end(text);
  });
}

async function startServer(context, pkc) {
  if (!vscode.workspace.getConfiguration('pk').get('server.enable')) {
    return;
  }
  if (!(await hasLsp(pkc))) {
    return;
  }
  let lc;
  try {
    lc = require('vscode-languageclient/node');
  } catch (e) {
    vscode.window.showWarningMessage(`pk: the language client is missing (${e.message}); running without the server.`);
    return;
  }
  client = new lc.LanguageClient(
    'pk',
    'pk language server',
    { command: pkc, args: ['lsp'], transport: lc.TransportKind.stdio },
    { documentSelector: [{ language: 'pk' }] },
  );
  context.subscriptions.push(client);
  await client.start();
}

function activate(context) {
  const pkc = pkcPath();
  const output = vscode.window.createOutputChannel('pk');
  context.subscriptions.push(output);
  context.subscriptions.push(
    vscode.languages.registerDocumentFormattingEditProvider('pk', {
      async provideDocumentFormattingEdits(document) {
        if (!vscode.workspace.getConfiguration('pk').get('formatter.enable')) {
          return [];
        }
        const text = document.getText();
        try {
          const formatted = await format(pkcPath(), text);
          if (formatted === text) {
            return [];
          }
          const all = new vscode.Range(document.positionAt(0), document.positionAt(text.length));
          return [vscode.TextEdit.replace(all, formatted)];
        } catch (message) {
          // A file that does not parse is left as it is; the reason goes
          // to the output channel (the server, if any, shows the errors).
          output.appendLine(String(message));
          return [];
        }
      },
    }),
  );
  startServer(context, pkc).catch((e) => output.appendLine(`pk language server: ${e}`));
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
