// CVision hand and fingertip API (camera frames): finding fingers, fingertip boxes, print crops.
#ifndef CVISION_HAND_H
#define CVISION_HAND_H

#include "cvision.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
