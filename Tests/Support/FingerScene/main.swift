// finger-scene: renders synthetic camera frames of a hand whose fingertips carry real FVC prints,
// for replay cameras in tests and benchmarks. (Written with the camera side of the finger pipeline.)
print("finger-scene: not yet written")
