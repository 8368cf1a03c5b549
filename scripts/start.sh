#!/usr/bin/env bash
# One command from a fresh clone to the running app: installs what is missing (npm packages, rust
# wasm target, wasm-bindgen-cli — see build-wasm.sh), builds, serves www/dist on
# http://127.0.0.1:8080 (the address it listens on) and opens the demo capture. Override the port with PORT=…
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-8080}"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "start: Node.js 20+ with npm is required (e.g. apt-get install nodejs npm)" >&2
  exit 1
fi
# A busy port is said before the build, not after it (Vite's own error came after the URL).
if ! node -e 'const s = require("net").createServer(); s.once("error", () => process.exit(1)); s.listen(Number(process.argv[1]), "127.0.0.1", () => s.close())' "$PORT"; then
  echo "start: port $PORT on 127.0.0.1 is in use: stop what listens there, or run PORT=8081 npm start" >&2
  exit 1
fi
if [[ ! -d node_modules/vite || ! -d node_modules/apache-arrow ]]; then
  echo "start: installing npm packages"
  if [[ -f package-lock.json ]]; then npm ci; else npm install; fi
fi

npm run build

URL="http://127.0.0.1:$PORT/?demo"
echo
echo "neuronscope is served at  $URL"
echo "(Ctrl-C to stop)"
echo
if command -v xdg-open >/dev/null 2>&1 && [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  (sleep 1; xdg-open "$URL" >/dev/null 2>&1 || true) &
fi
exec npx vite preview --host 127.0.0.1 --port "$PORT" --strictPort
