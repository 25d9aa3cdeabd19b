// Internal C++ helpers shared by the translation units of every cvis_ target (CImaging,
// CFaceVision, CFingerVision, CHandScene): not part of the C API, and not in the module map, so
// Swift never sees it.
#ifndef CVISION_INTERNAL_HPP
#define CVISION_INTERNAL_HPP

#include "cvision_imaging.h"

#include <exception>
#include <new>
#include <string>

#include <opencv2/core.hpp>

namespace cvis {

/// This thread's last error message (read by cvis_last_error()); defined once, in CImaging's
/// image.cpp.
extern thread_local std::string last_error;

/// Records `message` as this thread's last error and returns `status`.
inline cvis_status fail(cvis_status status, const std::string &message) {
    last_error = message;
    return status;
}

/// Runs `body`, turning any C++ exception into CVIS_ERR_INTERNAL (dlib's errors derive from
/// std::exception).
template <typename Body> cvis_status guarded(Body body) {
    try {
        return body();
    } catch (const cv::Exception &e) {
        return fail(CVIS_ERR_INTERNAL, std::string("OpenCV: ") + e.what());
    } catch (const std::bad_alloc &) {
        return fail(CVIS_ERR_INTERNAL, "out of memory");
    } catch (const std::exception &e) {
        return fail(CVIS_ERR_INTERNAL, e.what());
    } catch (...) {
        return fail(CVIS_ERR_INTERNAL, "unknown C++ exception");
    }
}

} // namespace cvis

#endif
