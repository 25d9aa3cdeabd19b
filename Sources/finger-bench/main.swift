// biometricd-finger-bench: fingerprint accuracy (FVC protocol) and speed. Filled in with the
// print pipeline.
print("usage: biometricd-finger-bench <fvc|speed|camera>")
