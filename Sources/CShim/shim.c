// Everything in the shim is static inline in include/cshim.h; SwiftPM wants
// at least one source file for a C target.
#include "cshim.h"
