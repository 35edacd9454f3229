// The engine worker's loader (a module worker; see src/engine/host.rs). The page
// and the engine are one WebAssembly module: the page posts the module it compiled
// and the URL of its wasm-bindgen bindings, and this instantiates them here. The
// module's `main` sees no window and starts the engine, which says `Ready`. The
// engine starts its helpers (src/engine/shards.rs) from this same loader.
self.addEventListener(
  'message',
  async (event) => {
    try {
      const { bindings, module } = event.data;
      // Kept for the engine, which loads its helper workers the same way.
      self.tokenmeterBindings = bindings;
      const glue = await import(bindings);
      await glue.default({ module_or_path: module });
    } catch (error) {
      // Rethrown from a task of its own, so that the page's `onerror` hears it.
      setTimeout(() => {
        throw new Error(`the engine could not load: ${error}`);
      });
    }
  },
  { once: true },
);
