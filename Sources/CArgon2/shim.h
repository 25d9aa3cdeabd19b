// Debian's libargon2 (libargon2-dev): the reference Argon2 implementation.
#include <argon2.h>
