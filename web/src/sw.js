// Offline copy of the page: network first (a rebuilt page is always taken when the server is
// there), the cached copy when it is not. Every file the page loads is listed in manifest.json.
const CACHE = "llmcalc-web";

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const manifest = await (await fetch("manifest.json", { cache: "no-store" })).json();
    const cache = await caches.open(CACHE);
    await cache.addAll(["./", "manifest.json", ...manifest.files]);
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => { event.waitUntil(self.clients.claim()); });

self.addEventListener("fetch", (event) => {
  const req = event.request;
  if (req.method !== "GET" || new URL(req.url).origin !== location.origin) return;
  event.respondWith((async () => {
    try {
      const res = await fetch(req);
      if (res.ok) (await caches.open(CACHE)).put(req, res.clone());
      return res;
    } catch (e) {
      const hit = await caches.match(req, { ignoreSearch: true });
      if (hit) return hit;
      throw e;
    }
  })());
});
