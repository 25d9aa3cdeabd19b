// CVision fingerprint API (contact or contact-like prints): segmentation, enhancement, minutiae.
#ifndef CVISION_PRINT_H
#define CVISION_PRINT_H

#include "cvision.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
