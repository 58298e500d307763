  // @needs apply, charCodeAt, NewUint16Array
  // @gives engine, io, config, load, buildEngine
  // ---- Engine (Rust → wasm32 → wasm2js), built on the first dialog ----
  // Most frames never show a dialog, and building the engine costs more than the rest of
  // this file. The factory sees only globals captured now, so a page that later replaces
  // Math, typed arrays or String methods can neither break it nor see it being built.
  const ENGINE_GLOBALS = [
    { __proto__: null, abs: Math.abs, ceil: Math.ceil, clz32: Math.clz32, floor: Math.floor, fround: Math.fround,
      imul: Math.imul, max: Math.max, min: Math.min, sqrt: Math.sqrt, trunc: Math.trunc },
    ArrayBuffer, Int8Array, Int16Array, Int32Array, Uint8Array, Uint16Array, Uint32Array, Float32Array, Float64Array,
    { __proto__: null, create: Object.create, prototype: Object.prototype },
    Error,
    (str, i) => apply(charCodeAt, str, [i]),
  ];
  // eslint-disable-next-line no-shadow
  const factory = (Math, ArrayBuffer, Int8Array, Int16Array, Int32Array, Uint8Array, Uint16Array, Uint32Array,
    Float32Array, Float64Array, Object, Error, charCodeAtOf) => {
    /*@ENGINE@*/
  };
  let engine = null;
  let io = null;
  // The latest config (engine/src/config.rs: pilot switch, policy, rules), loaded when the
  // engine is built. Passed through whole: only the engine reads it.
  let config = null;
  const load = (cfg) => {
    const n = cfg.length;
    if (n > io.length) return;
    for (let i = 0; i < n; i++) io[i] = apply(charCodeAt, cfg, [i]);
    engine.load(n);
  };
  // Builds the engine and loads the config it has (20-channel's `boot` asks for it first).
  const buildEngine = () => {
    engine = apply(factory, undefined, ENGINE_GLOBALS);
    io = new NewUint16Array(engine.memory.buffer, engine.io_ptr(), engine.io_cap());
    if (config !== null) load(config);
  };
