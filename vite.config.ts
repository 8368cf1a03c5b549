// Vite builds the static site from www/ into www/dist. The wasm core is not bundled: scripts/build-wasm.sh
// writes wasm-bindgen's output to www/public/pkg, which Vite copies verbatim and the worker imports at
// run time (its URL is passed in by the page), so the site works from any base path and offline.
import { defineConfig } from 'vite';

const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  root: 'www',
  base: './',
  publicDir: 'public',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 2048,
  },
  worker: { format: 'es' },
  // Cross-origin isolated (SharedArrayBuffer between the page's workers: the pipelined split
  // decode, www/src/client.ts); a host that cannot send these headers gets the unpipelined decode.
  server: { host: '127.0.0.1', port: 5173, headers: ISOLATION },
  preview: { host: '127.0.0.1', port: 8080, headers: ISOLATION },
});
