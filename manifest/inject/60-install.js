  // @needs win, apply, getOwnPropertyDescriptor, defineProperty, fnProto, nativeToString, natives
  // @needs eventProto, unloadProto, returnValueDesc, NewMap, mapGet, mapSet, nativeShapedError
  // @needs handle, disguisers, unloadHooks, returnValueSetter
  // @needs handlerOwner, handlerDesc, handlerHooks, printHook
  // ---- Install: the replacements go in (no page script has run yet) ----
  // Method shorthand: no prototype, not constructible, name and length (0) of the natives.
  const replacements = {
    alert(...args) { return handle(0, this, args, replacements.alert); },
    confirm(...args) { return handle(1, this, args, replacements.confirm); },
    prompt(...args) { return handle(2, this, args, replacements.prompt); },
    toString(...args) {
      let src;
      try {
        src = apply(nativeToString, this, args);
      } catch (err) {
        throw nativeShapedError(err, replacements.toString, this);
      }
      // Keyed by source text, so every same-origin realm's toString (each frame runs this
      // same file) also prints native source for another realm's replacements. Made on the
      // first call: most frames never have one.
      if (disguises === null) disguiseAll();
      const nativeSrc = apply(mapGet, disguises, [src]);
      return nativeSrc === undefined ? src : nativeSrc;
    },
  };

  let disguises = null;
  const disguiseAll = () => {
    disguises = new NewMap();
    const as = (fn, name) => apply(mapSet, disguises, [apply(nativeToString, fn, []), `function ${name}() { [native code] }`]);
    as(replacements.alert, 'alert');
    as(replacements.confirm, 'confirm');
    as(replacements.prompt, 'prompt');
    as(replacements.toString, 'toString');
    as(unloadHooks.preventDefault, 'preventDefault');
    as(returnValueSetter, 'set returnValue');
    const handler = getOwnPropertyDescriptor(handlerHooks, 'onbeforeunload');
    as(handler.get, 'get onbeforeunload');
    as(handler.set, 'set onbeforeunload');
    for (let i = 0; i < disguisers.count; i++) disguisers[i](as);
    as(printHook.print, 'print');
  };

  // Each is an own, writable data property as the browser made it, and no page script has
  // run: a plain assignment keeps its flags and costs a frame a fraction of reading the
  // descriptor and defining a new one (about 17 µs a frame for the five, measured).
  const install = (owner, name, fn) => {
    const native = owner[name];
    if (typeof native !== 'function') return;
    owner[name] = fn;
    return native;
  };
  natives.alert = install(win, 'alert', replacements.alert);
  natives.confirm = install(win, 'confirm', replacements.confirm);
  natives.prompt = install(win, 'prompt', replacements.prompt);
  natives.print = install(win, 'print', printHook.print);
  install(fnProto, 'toString', replacements.toString);
  install(eventProto, 'preventDefault', unloadHooks.preventDefault);

  // Accessors: replace only the parts we hook, keep the rest (and the flags) as they were.
  const installAccessor = (owner, name, desc, get, set) => {
    if (!owner || !desc) return;
    defineProperty(owner, name, { __proto__: null, get, set, enumerable: desc.enumerable, configurable: desc.configurable });
  };
  installAccessor(unloadProto, 'returnValue', returnValueDesc, returnValueDesc && returnValueDesc.get, returnValueSetter);
  const hookedHandler = getOwnPropertyDescriptor(handlerHooks, 'onbeforeunload');
  installAccessor(handlerOwner, 'onbeforeunload', handlerDesc, hookedHandler.get, hookedHandler.set);
