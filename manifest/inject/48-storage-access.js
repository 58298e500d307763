  // @needs apply, documentProto, getterOf, react, refuseAsBrowser, addDisguiser
  // @needs askBrowser, ANSWER_NATIVE, ANSWER_ACCEPT, ANSWER_NONE, deferred, settle, directPromise
  // ---- Storage access: document.requestStorageAccess() ----
  // In another site's frame without access, a headful browser that blocks third-party
  // cookies asks the person (a prompt that waits); headless it refuses at once
  // (MODAL-FACTS 6); where the frame has access already it grants it without asking. The
  // hook asks the browser's own hasStorageAccess() first, then asks (rule, policy, agent)
  // with that answer: a refusal is the browser's own (NotAllowedError, its words), an
  // accept or the browser's own way (pilot off) makes the real call.
  //
  // Start-up cost: two reads, an assignment and a getter looked up (the brand check).
  const NOT_ALLOWED_ACCESS = 'requestStorageAccess not allowed';
  const hasStorageAccess = documentProto.hasStorageAccess;
  const requestStorageAccess = documentProto.requestStorageAccess;
  const hiddenOf = getterOf(documentProto, 'hidden');
  const storageHooks = {
    requestStorageAccess() {
      const self = this;
      const args = arguments;
      let had;
      try {
        apply(hiddenOf, self, []); // a document (of any frame), else the browser's own error
        had = apply(hasStorageAccess, self, []);
      } catch {
        return directPromise(requestStorageAccess, self, args, storageHooks.requestStorageAccess);
      }
      if (had === null || typeof had !== 'object') return directPromise(requestStorageAccess, self, args, storageHooks.requestStorageAccess);
      const d = deferred();
      const decide = (has) => {
        askBrowser('storage_access', has === true ? 'granted' : 'not_granted', 'requestStorageAccess', (code) => {
          // Nobody answered (the flood limit): what the browser would do without a prompt.
          if (code === ANSWER_NATIVE || code === ANSWER_ACCEPT || (code === ANSWER_NONE && has === true)) {
            settle(requestStorageAccess, self, args, d.resolve, d.reject, null);
          } else refuseAsBrowser(d.reject, NOT_ALLOWED_ACCESS, 'NotAllowedError');
        });
      };
      react(had, decide, () => settle(requestStorageAccess, self, args, d.resolve, d.reject, null));
      return d.promise;
    },
  };
  const storageHooked = typeof requestStorageAccess === 'function' && typeof hasStorageAccess === 'function' && hiddenOf !== null;
  if (storageHooked) documentProto.requestStorageAccess = storageHooks.requestStorageAccess;
  addDisguiser((as) => {
    if (storageHooked) as(storageHooks.requestStorageAccess, 'requestStorageAccess');
  });
