  // @needs apply, protoOf, react, refuseAsBrowser, newDOMException, captureStackTrace, addDisguiser
  // @needs askBrowser, ANSWER_NATIVE, ANSWER_ACCEPT, ANSWER_NONE, deferred, settle, directPromise
  // ---- Payment Request: PaymentRequest.prototype.show() ----
  // Headless, show() fails by itself within ~25 ms (no payment app; MODAL-FACTS 6); a
  // headful browser with a payment app for the methods shows its payment sheet, which waits
  // for a person. The hook asks the browser's own canMakePayment() first (can an app take
  // it, so would a sheet show?), then asks (rule, policy, agent) with that answer: a refusal
  // rejects show() as a person's closing of the sheet does (AbortError, the browser's
  // words), an accept or the browser's own way (pilot off) makes the real call. Where
  // canMakePayment() fails (show() called before, a wrong receiver) the real call follows at
  // once: it fails the same way, without a sheet.
  //
  // Start-up cost: the interface (secure contexts only), a read and an assignment.
  const paymentProto = protoOf('PaymentRequest');
  const USER_CLOSED = 'User closed the Payment Request UI.';
  let paymentShow = null;
  let canMakePayment = null;
  // The requests whose show() was called: a second call fails as the browser fails it, at
  // once, though the first may not have reached the browser yet (held, or refused here).
  const NewWeakSet = WeakSet;
  const weakAdd = WeakSet.prototype.add;
  const weakHas = WeakSet.prototype.has;
  let shown = null;
  const ALREADY = "Failed to execute 'show' on 'PaymentRequest': Already called show() once";
  const paymentHooks = {
    show() {
      const self = this;
      const args = arguments;
      let able;
      try {
        able = apply(canMakePayment, self, []);
      } catch {
        return directPromise(paymentShow, self, args, paymentHooks.show);
      }
      if (able === null || typeof able !== 'object') return directPromise(paymentShow, self, args, paymentHooks.show);
      if (shown === null) shown = new NewWeakSet();
      const d = deferred();
      if (apply(weakHas, shown, [self])) {
        const err = newDOMException(ALREADY, 'InvalidStateError');
        captureStackTrace(err, paymentHooks.show);
        d.reject(err);
        return d.promise;
      }
      apply(weakAdd, shown, [self]);
      const decide = (can) => {
        askBrowser('payment', can === true ? 'able' : 'unable', 'show', (code) => {
          // Nobody answered (the flood limit): the browser's own way where it shows no sheet.
          const native = code === ANSWER_NATIVE || code === ANSWER_ACCEPT || (code === ANSWER_NONE && can !== true);
          if (native) settle(paymentShow, self, args, d.resolve, d.reject, null);
          else refuseAsBrowser(d.reject, USER_CLOSED, 'AbortError');
        });
      };
      react(able, decide, () => settle(paymentShow, self, args, d.resolve, d.reject, null));
      return d.promise;
    },
  };
  if (paymentProto !== null && typeof paymentProto.show === 'function') {
    canMakePayment = paymentProto.canMakePayment;
    paymentShow = paymentProto.show;
    paymentProto.show = paymentHooks.show;
  }
  addDisguiser((as) => {
    if (paymentShow !== null) as(paymentHooks.show, 'show');
  });
