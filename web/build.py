#!/usr/bin/env python3
"""Build the web page (web/dist/): the calculators in a browser, the built scripts run unchanged in
Pyodide (CPython compiled to WebAssembly), so the page and the command line give one answer.

The page holds no formula and no flag list: at build time this copies the built single-file
scripts (tools/build_scripts.py SCRIPTS: calc_*.py and hardware.py) and the bundled model configs
(tests/fixtures/configs/*.json) next to the page, and Pyodide's runtime from the npm package
pinned in web/package.json (`npm ci` runs here when web/node_modules lacks it). In the browser the
page reads each script's argparse parser (build_parser()) to draw its form, and runs its
main(argv) for every answer. Everything is fetched from the page's own folder: once loaded it
needs no network (sw.js keeps a copy for offline use).

  python3 web/build.py                 # build web/dist/
  python3 web/build.py serve           # build, then serve it on http://127.0.0.1:8000/
  python3 web/build.py serve --port 0  # any free port (printed)
  python3 web/build.py --out DIR       # build into DIR (the tests build into a temporary folder)

web/dist/ is a folder of static files: publish it on any static host (GitHub Pages, an S3
bucket, nginx) as it is. See docs/web.md.
"""
import argparse
import base64
import functools
import hashlib
import http.server
import importlib.util
import json
import os
import shutil
import subprocess
import sys

WEB = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(WEB)
SRC = os.path.join(WEB, "src")
CONFIGS = os.path.join(ROOT, "tests", "fixtures", "configs")
CONFIG_DIR_IN_PAGE = "tests/fixtures/configs"  # the configs' path relative to the scripts, as here
PYODIDE = os.path.join(WEB, "node_modules", "pyodide")
# The runtime files the page loads (the npm package's others are typings, source maps and demos).
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
                 "pyodide-lock.json")
# What a static host must send for these (Python's table takes .mjs from the system's
# /etc/mime.types, when there is one; a module script sent as application/octet-stream is refused).
MIME = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
        ".json": "application/json", ".py": "text/plain; charset=utf-8", ".zip": "application/zip"}


def built_scripts():
    """The built scripts, in the build's own order (tools/build_scripts.py SCRIPTS)."""
    spec = importlib.util.spec_from_file_location(
        "build_scripts", os.path.join(ROOT, "tools", "build_scripts.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(mod.SCRIPTS)


def tool_key(script):
    """The view's short name in the URL: calc_transformer_mem.py -> mem."""
    name = os.path.splitext(script)[0]
    for prefix in ("calc_transformer_", "calc_"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def ensure_pyodide():
    """Pyodide's npm package in web/node_modules: `npm ci` (the lock file's exact version) when
    it is not there. Exit 2 with one line when npm is missing or fails."""
    if all(os.path.exists(os.path.join(PYODIDE, f)) for f in PYODIDE_FILES):
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("web/build.py: error: npm is needed once to fetch Pyodide (web/package.json); "
                 "install Node.js and npm")
    run = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=WEB, capture_output=True,
                         text=True)
    if run.returncode:
        last = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["no output"]
        sys.exit(f"web/build.py: error: npm ci in web/ failed: {last[0]}")


def _copy(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)


def build(out):
    """Write the page into `out` (emptied first); return its manifest."""
    ensure_pyodide()
    if os.path.isdir(out):
        shutil.rmtree(out)
    files = []
    for name in sorted(os.listdir(SRC)):
        _copy(os.path.join(SRC, name), os.path.join(out, name))
        files.append(name)
    for name in PYODIDE_FILES:
        src = os.path.join(PYODIDE, name)
        if os.path.exists(src):
            _copy(src, os.path.join(out, "pyodide", name))
            files.append(f"pyodide/{name}")
    tools = []
    for script in built_scripts():
        path = os.path.join(ROOT, script)
        _copy(path, os.path.join(out, "py", script))
        files.append(f"py/{script}")
        tools.append({"script": script, "key": tool_key(script), "bytes": os.path.getsize(path)})
    configs = {}
    for name in sorted(os.listdir(CONFIGS)):
        if name.endswith(".json"):
            with open(os.path.join(CONFIGS, name), encoding="utf-8") as fh:
                configs[name[:-len(".json")]] = fh.read()
    with open(os.path.join(out, "configs.json"), "w", encoding="utf-8") as fh:
        json.dump({"dir": CONFIG_DIR_IN_PAGE, "files": configs}, fh)
    files.append("configs.json")
    digest = hashlib.sha256()
    for rel in files:
        with open(os.path.join(out, rel), "rb") as fh:
            digest.update(rel.encode() + fh.read())
    manifest = {"tools": tools, "configs": sorted(configs), "config_dir": CONFIG_DIR_IN_PAGE,
                "files": files, "version": base64.b32encode(digest.digest()[:10]).decode().lower()}
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    return manifest


class Handler(http.server.SimpleHTTPRequestHandler):
    """A static file server with the MIME types the page needs, quiet unless asked."""
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME}
    verbose = False

    def log_message(self, fmt, *args):
        if self.verbose:
            super().log_message(fmt, *args)


def make_server(directory, port=8000, host="127.0.0.1", verbose=False):
    """An HTTP server for `directory` (port 0: any free one); call serve_forever()."""
    handler = functools.partial(type("H", (Handler,), {"verbose": verbose}), directory=directory)
    return http.server.ThreadingHTTPServer((host, port), handler)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="web/build.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", choices=("build", "serve"), default="build")
    parser.add_argument("--out", default=os.path.join(WEB, "dist"), help="where (web/dist)")
    parser.add_argument("--port", type=int, default=8000, help="for serve (0: any free port)")
    args = parser.parse_args(argv)
    manifest = build(args.out)
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in manifest["files"])
    print(f"built {args.out}: {len(manifest['tools'])} tools, {len(manifest['configs'])} configs, "
          f"{len(manifest['files'])} files, {size / 2**20:.1f} MiB")
    if args.command == "serve":
        server = make_server(args.out, args.port, verbose=True)
        print(f"serving http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return manifest


if __name__ == "__main__":
    main()
