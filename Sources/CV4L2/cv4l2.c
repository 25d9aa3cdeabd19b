// The shim is header-only; this file gives SwiftPM a compilation unit.
#include "cv4l2.h"
