/* Example: the C API (include/onyx/c_api.h) — load a model with the CPU EP, print its inputs and
 * outputs, run it on deterministic inputs, print the first output and where each node ran.
 *
 *   run_model_c [MODEL]
 *
 * MODEL defaults to examples/models/tiny_cnn.onnx (run from the repository root). Symbolic dims
 * are set to 1; float inputs are filled with a fixed ramp, other numeric inputs with zeros.
 * Exits 1, printing onyx's message, when any call fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onyx/c_api.h"

/* Prints a failed call's status and leaves the function (through its cleanup label). */
#define CHECK(call)                                                                                  \
  do {                                                                                               \
    OnyxStatus* status_ = (call);                                                                    \
    if (status_) {                                                                                   \
      fprintf(stderr, "error: %s: %s\n", onyx_error_code_name(onyx_status_code(status_)),            \
              onyx_status_message(status_));                                                         \
      onyx_status_release(status_);                                                                  \
      goto done;                                                                                     \
    }                                                                                                \
  } while (0)

static void print_shape(const int64_t* dims, int64_t rank) {
  int64_t i;
  printf("[");
  for (i = 0; i < rank; ++i) printf("%s%lld", i ? "," : "", (long long)dims[i]);
  printf("]");
}

/* Prints "NAME TYPE[dims]" of one input or output, a named dim as its name. */
static OnyxStatus* print_io(const char* what, const OnyxIoInfo* info) {
  const char* name;
  const char* dim_name;
  OnyxElementType type;
  const int64_t* dims;
  int64_t rank, i;
  OnyxStatus* s;
  if ((s = onyx_io_info_name(info, &name)) || (s = onyx_io_info_element_type(info, &type)) ||
      (s = onyx_io_info_shape(info, &dims, &rank)))
    return s;
  printf("%-6s %-16s %s", what, name, onyx_element_type_name(type));
  if (rank < 0) {
    printf(" (rank unknown)\n");
    return NULL;
  }
  printf("[");
  for (i = 0; i < rank; ++i) {
    if ((s = onyx_io_info_dim_name(info, (size_t)i, &dim_name))) return s;
    if (dims[i] >= 0) printf("%s%lld", i ? "," : "", (long long)dims[i]);
    else printf("%s%s", i ? "," : "", dim_name[0] ? dim_name : "?");
  }
  printf("]\n");
  return NULL;
}

int main(int argc, char** argv) {
  const char* model = argc > 1 ? argv[1] : "examples/models/tiny_cnn.onnx";
  int rc = 1;
  size_t num_inputs = 0, num_outputs = 0, used = 0, i, k;
  OnyxSessionBuilder* builder = NULL;
  OnyxSession* session = NULL;
  OnyxPlacement* placement = NULL;
  OnyxTensor** inputs = NULL;
  const char** input_names = NULL;
  void** buffers = NULL;
  OnyxTensor* output = NULL;

  if (onyx_api_version() < ONYX_C_API_VERSION) {
    fprintf(stderr, "error: libonyx has C API version %u, this program needs %d\n", (unsigned)onyx_api_version(),
            ONYX_C_API_VERSION);
    return 1;
  }
  printf("onyx %s, C API version %u\n", onyx_version_string(), (unsigned)onyx_api_version());

  CHECK(onyx_session_builder_create(&builder));
  CHECK(onyx_session_builder_add_execution_provider(builder, "cpu", NULL, NULL, 0, 1));
  CHECK(onyx_session_builder_set_intra_threads(builder, 2));
  CHECK(onyx_session_create_from_file(builder, model, &session));

  CHECK(onyx_session_input_count(session, &num_inputs));
  CHECK(onyx_session_output_count(session, &num_outputs));
  inputs = calloc(num_inputs + 1, sizeof *inputs);
  input_names = calloc(num_inputs + 1, sizeof *input_names);
  buffers = calloc(num_inputs + 1, sizeof *buffers);
  if (!inputs || !input_names || !buffers) {
    fprintf(stderr, "error: out of memory\n");
    goto done;
  }

  /* One tensor per input without a default, over a buffer this program owns. */
  for (i = 0; i < num_inputs; ++i) {
    const OnyxIoInfo* info;
    const int64_t* declared;
    int64_t rank, d, count = 1;
    int64_t dims[16];
    int has_default;
    OnyxElementType type;
    size_t elem, bytes;
    CHECK(onyx_session_input_info(session, i, &info));
    CHECK(print_io("input", info));
    CHECK(onyx_io_info_has_default(info, &has_default));
    if (has_default) continue; /* an initializer supplies it */
    CHECK(onyx_io_info_element_type(info, &type));
    CHECK(onyx_io_info_shape(info, &declared, &rank));
    elem = onyx_element_type_size(type);
    if (rank < 0 || rank > 16 || elem == 0) {
      fprintf(stderr, "error: input %zu: this example feeds numeric tensors of known rank (up to 16) only\n", i);
      goto done;
    }
    for (d = 0; d < rank; ++d) {
      dims[d] = declared[d] < 0 ? 1 : declared[d];
      count *= dims[d];
    }
    bytes = (size_t)count * elem;
    buffers[used] = calloc(bytes ? bytes : 1, 1); /* malloc'd memory is aligned for any element type */
    if (!buffers[used]) {
      fprintf(stderr, "error: out of memory\n");
      goto done;
    }
    if (type == ONYX_TYPE_FLOAT) {
      float* f = (float*)buffers[used];
      for (k = 0; k < (size_t)count; ++k) f[k] = (float)(k % 17) / 17.0f - 0.5f;
    }
    CHECK(onyx_tensor_create_over_buffer(type, dims, (size_t)rank, buffers[used], bytes, &inputs[used]));
    CHECK(onyx_io_info_name(info, &input_names[used]));
    ++used;
  }
  for (i = 0; i < num_outputs; ++i) {
    const OnyxIoInfo* info;
    CHECK(onyx_session_output_info(session, i, &info));
    CHECK(print_io("output", info));
  }

  /* Run, asking for the first output alone. */
  if (num_outputs > 0) {
    const OnyxIoInfo* info;
    const char* output_name;
    const int64_t* dims;
    size_t rank;
    int64_t count;
    OnyxElementType type;
    void* data;
    double sum = 0;
    CHECK(onyx_session_output_info(session, 0, &info));
    CHECK(onyx_io_info_name(info, &output_name));
    CHECK(onyx_session_run(session, NULL, input_names, (const OnyxTensor* const*)inputs, used, &output_name, 1, &output));
    CHECK(onyx_tensor_element_type(output, &type));
    CHECK(onyx_tensor_shape(output, &dims, &rank));
    CHECK(onyx_tensor_element_count(output, &count));
    printf("result %s %s", output_name, onyx_element_type_name(type));
    print_shape(dims, (int64_t)rank);
    if (type == ONYX_TYPE_FLOAT) {
      CHECK(onyx_tensor_data(output, &data));
      printf(":");
      for (k = 0; k < (size_t)count; ++k) {
        if (k < 5) printf(" %.5f", ((const float*)data)[k]);
        sum += ((const float*)data)[k];
      }
      printf("%s\nresult sum %.4f", count > 5 ? " ..." : "", sum);
    }
    printf("\n");
  }

  /* Where each node ran, and why higher-priority EPs declined it. */
  CHECK(onyx_session_placement(session, &placement));
  {
    const char* summary;
    size_t nodes;
    CHECK(onyx_placement_summary(placement, &summary));
    CHECK(onyx_placement_node_count(placement, &nodes));
    printf("placement: %s\n", summary);
    for (i = 0; i < nodes; ++i) {
      const char *name, *op_type, *ep;
      size_t declines, j;
      CHECK(onyx_placement_node(placement, i, &name, &op_type, NULL, &ep, NULL, NULL));
      CHECK(onyx_placement_node_decline_count(placement, i, &declines));
      printf("node %-20s %-18s on %s\n", name, op_type, ep);
      for (j = 0; j < declines; ++j) {
        const char *by, *code, *message;
        CHECK(onyx_placement_node_decline(placement, i, j, &by, &code, &message));
        printf("     declined by %s: %s (%s)\n", by, message, code);
      }
    }
  }
  rc = 0;

done:
  onyx_tensor_release(output);
  for (i = 0; i < used; ++i) onyx_tensor_release(inputs[i]);
  if (buffers)
    for (i = 0; i <= used && i <= num_inputs; ++i) free(buffers[i]);
  free(buffers);
  free((void*)input_names);
  free(inputs);
  onyx_placement_release(placement);
  onyx_session_release(session);
  onyx_session_builder_release(builder);
  return rc;
}
