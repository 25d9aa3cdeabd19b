#include "csystemd.h"
