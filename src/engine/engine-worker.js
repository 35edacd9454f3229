// The engine worker's loader (a module worker; see src/engine/host.rs). The page
// and the engine are one WebAssembly module: the page posts the module it compiled
// and the URL of its wasm-bindgen bindings, and this instantiates them here. The
// module's `main` sees no window and starts the engine, which says `Ready`.
self.addEventListener(
  'message',
  async (event) => {
    try {
      const { bindings, module } = event.data;
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
