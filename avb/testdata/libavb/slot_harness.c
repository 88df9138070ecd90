/*
 * A bootloader whose partitions are the files DIR/NAME.img, for recording
 * libavb's avb_slot_verify on a whole device set (record_slots.sh builds it
 * against AOSP's libavb; libavb itself is not kept here).
 *
 *   slot_harness KEY DIR REQUESTED [SUFFIX] [mode=N] [LOCATION=INDEX ...] [NAME:HEX ...]
 *
 * The top-level vbmeta is DIR/vbmeta.img (libavb reads the "vbmeta"
 * partition from its start); a partition whose file is missing does not
 * exist. KEY is the AVB public key blob the device trusts for the top-level
 * vbmeta, or "-" to trust the embedded one. REQUESTED is a comma-separated
 * list of the partitions the bootloader loads (their hash descriptors are
 * checked). SUFFIX is the A/B suffix (an argument starting with "_", or
 * "-" for none: the default). Stored rollback indexes are 0 but for the
 * locations given. The device's persistent values are the NAME:HEX
 * arguments (avb.persistent_digest.boot:00ff...), none but those; each run
 * starts from them. Prints avb_slot_verify's result with the device
 * locked, then unlocked (ALLOW_VERIFICATION_ERROR), then the sha256
 * androidboot.vbmeta.digest of the unlocked run's data ("-" when there is
 * none), then the persistent values the locked run wrote, NAME=HEX joined
 * by commas ("-" for none).
 *
 * With mode=N (an AvbHashtreeErrorMode, 0 to 5) the runs use that mode
 * (else RESTART) and it prints, for the locked run then the unlocked one,
 * a line "STATE RESULT DATA LOADED" (DATA yes when avb_slot_verify
 * returned slot data; LOADED its loaded partitions NAME:SIZE:RESULT joined
 * by commas, "-" for none) and a line holding its kernel command line as
 * it is (empty without data). A partition's unique GUID is made of its
 * name (guid_of; the Go test makes the same ones), and a partition
 * without a file has none (NO_SUCH_PARTITION).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavb.h>

static const char* dir;
static uint8_t* trusted_key;
static size_t trusted_key_len;
static int unlocked;
static uint64_t stored[AVB_MAX_NUMBER_OF_ROLLBACK_INDEX_LOCATIONS];

/* Persistent values: the given ones, and what a run wrote. */
#define MAX_VALUES 16
struct value {
  char name[64];
  uint8_t data[64];
  size_t len;
};
static struct value given[MAX_VALUES], values[MAX_VALUES], written[MAX_VALUES];
static size_t num_given, num_values, num_written;

static struct value* find_value(struct value* vs, size_t n, const char* name) {
  size_t i;
  for (i = 0; i < n; i++)
    if (strcmp(vs[i].name, name) == 0) return &vs[i];
  return NULL;
}

static AvbIOResult read_persistent_value(AvbOps* ops, const char* name, size_t buffer_size, uint8_t* out_buffer,
                                         size_t* out_num_bytes_read) {
  struct value* v = find_value(values, num_values, name);
  if (v == NULL || v->len == 0) return AVB_IO_RESULT_ERROR_NO_SUCH_VALUE;
  *out_num_bytes_read = v->len;
  if (buffer_size < v->len) return AVB_IO_RESULT_ERROR_INSUFFICIENT_SPACE;
  memcpy(out_buffer, v->data, v->len);
  return AVB_IO_RESULT_OK;
}

static AvbIOResult write_persistent_value(AvbOps* ops, const char* name, size_t value_size, const uint8_t* value) {
  struct value* v = find_value(values, num_values, name);
  if (value_size > sizeof v->data || strlen(name) >= sizeof v->name) return AVB_IO_RESULT_ERROR_INVALID_VALUE_SIZE;
  if (v == NULL) {
    if (num_values == MAX_VALUES) return AVB_IO_RESULT_ERROR_IO;
    v = &values[num_values++];
    strcpy(v->name, name);
  }
  memcpy(v->data, value, value_size);
  v->len = value_size;
  if (num_written < MAX_VALUES) written[num_written++] = *v;
  return AVB_IO_RESULT_OK;
}

static FILE* open_partition(const char* partition) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.img", dir, partition);
  return fopen(path, "rb");
}

static AvbIOResult read_from_partition(AvbOps* ops, const char* partition, int64_t offset, size_t num_bytes,
                                       void* buffer, size_t* out_num_read) {
  FILE* f = open_partition(partition);
  long size;
  if (f == NULL) return AVB_IO_RESULT_ERROR_NO_SUCH_PARTITION;
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  if (offset < 0) offset += size;
  if (offset < 0 || offset > size) {
    fclose(f);
    return AVB_IO_RESULT_ERROR_RANGE_OUTSIDE_PARTITION;
  }
  fseek(f, offset, SEEK_SET);
  *out_num_read = fread(buffer, 1, num_bytes, f);
  fclose(f);
  return AVB_IO_RESULT_OK;
}

static AvbIOResult get_size_of_partition(AvbOps* ops, const char* partition, uint64_t* out_size) {
  FILE* f = open_partition(partition);
  if (f == NULL) return AVB_IO_RESULT_ERROR_NO_SUCH_PARTITION;
  fseek(f, 0, SEEK_END);
  *out_size = (uint64_t)ftell(f);
  fclose(f);
  return AVB_IO_RESULT_OK;
}

static AvbIOResult validate_vbmeta_public_key(AvbOps* ops, const uint8_t* key, size_t key_len, const uint8_t* md,
                                              size_t md_len, bool* out_is_trusted) {
  *out_is_trusted = trusted_key == NULL || (key_len == trusted_key_len && memcmp(key, trusted_key, key_len) == 0);
  return AVB_IO_RESULT_OK;
}

static AvbIOResult read_rollback_index(AvbOps* ops, size_t location, uint64_t* out_index) {
  if (location >= AVB_MAX_NUMBER_OF_ROLLBACK_INDEX_LOCATIONS) return AVB_IO_RESULT_ERROR_IO;
  *out_index = stored[location];
  return AVB_IO_RESULT_OK;
}

static AvbIOResult read_is_device_unlocked(AvbOps* ops, bool* out_is_unlocked) {
  *out_is_unlocked = unlocked;
  return AVB_IO_RESULT_OK;
}

/* A GUID made of the name: its FNV-1a 32-bit hash and its length. */
static void guid_of(const char* partition, char* buf, size_t size) {
  uint32_t h = 2166136261u;
  const char* p;
  for (p = partition; *p != '\0'; p++) h = (h ^ (uint8_t)*p) * 16777619u;
  snprintf(buf, size, "%08x-0000-4000-8000-%012x", h, (unsigned)strlen(partition));
}

static AvbIOResult get_unique_guid_for_partition(AvbOps* ops, const char* partition, char* buf, size_t size) {
  FILE* f = open_partition(partition);
  if (f == NULL) return AVB_IO_RESULT_ERROR_NO_SUCH_PARTITION;
  fclose(f);
  guid_of(partition, buf, size);
  return AVB_IO_RESULT_OK;
}

/* The second form's report of one run. */
static void report(const char* state, AvbSlotVerifyResult r, AvbSlotVerifyData* data) {
  size_t n;
  printf("%s %s %s ", state, avb_slot_verify_result_to_string(r), data != NULL ? "yes" : "no");
  if (data == NULL || data->num_loaded_partitions == 0) printf("-");
  for (n = 0; data != NULL && n < data->num_loaded_partitions; n++) {
    AvbPartitionData* p = &data->loaded_partitions[n];
    printf("%s%s:%llu:%s", n > 0 ? "," : "", p->partition_name, (unsigned long long)p->data_size,
           avb_slot_verify_result_to_string(p->verify_result));
  }
  printf("\n%s\n", data != NULL && data->cmdline != NULL ? data->cmdline : "");
}

static uint8_t* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  uint8_t* b;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  b = malloc(*len + 1);
  if (fread(b, 1, *len, f) != *len) {
    fclose(f);
    return NULL;
  }
  fclose(f);
  return b;
}

static int parse_value(const char* arg, struct value* v) {
  const char* colon = strchr(arg, ':');
  size_t i, hex;
  if (colon == NULL || (size_t)(colon - arg) >= sizeof v->name) return 0;
  memcpy(v->name, arg, colon - arg);
  v->name[colon - arg] = '\0';
  hex = strlen(colon + 1);
  if (hex % 2 != 0 || hex / 2 > sizeof v->data) return 0;
  for (i = 0; i < hex / 2; i++) {
    unsigned b;
    if (sscanf(colon + 1 + 2 * i, "%2x", &b) != 1) return 0;
    v->data[i] = (uint8_t)b;
  }
  v->len = hex / 2;
  return 1;
}

int main(int argc, char** argv) {
  AvbOps ops;
  const char* suffix = "";
  const char* requested[16];
  char* list;
  size_t n = 0;
  int i;
  AvbSlotVerifyData* data = NULL;
  AvbSlotVerifyResult locked, open;
  AvbHashtreeErrorMode mode = AVB_HASHTREE_ERROR_MODE_RESTART;
  int detailed = 0;
  size_t digests_written;
  if (argc < 4) {
    fprintf(stderr, "usage: slot_harness KEY DIR REQUESTED [SUFFIX] [LOCATION=INDEX ...] [NAME:HEX ...]\n");
    return 2;
  }
  if (strcmp(argv[1], "-") != 0 && (trusted_key = read_file(argv[1], &trusted_key_len)) == NULL) {
    fprintf(stderr, "slot_harness: cannot read %s\n", argv[1]);
    return 2;
  }
  dir = argv[2];
  for (list = strtok(argv[3], ","); list != NULL && n < 15; list = strtok(NULL, ",")) requested[n++] = list;
  requested[n] = NULL;
  for (i = 4; i < argc; i++) {
    unsigned loc;
    unsigned long long index;
    if (strcmp(argv[i], "-") == 0) continue;
    if (strncmp(argv[i], "mode=", 5) == 0) {
      mode = (AvbHashtreeErrorMode)atoi(argv[i] + 5);
      detailed = 1;
      continue;
    }
    if (argv[i][0] == '_') {
      suffix = argv[i];
      continue;
    }
    if (strchr(argv[i], ':') != NULL) {
      if (num_given == MAX_VALUES || !parse_value(argv[i], &given[num_given++])) return 2;
      continue;
    }
    if (sscanf(argv[i], "%u=%llu", &loc, &index) != 2 || loc >= AVB_MAX_NUMBER_OF_ROLLBACK_INDEX_LOCATIONS) return 2;
    stored[loc] = index;
  }
  memset(&ops, 0, sizeof ops);
  ops.read_from_partition = read_from_partition;
  ops.get_size_of_partition = get_size_of_partition;
  ops.validate_vbmeta_public_key = validate_vbmeta_public_key;
  ops.read_rollback_index = read_rollback_index;
  ops.read_is_device_unlocked = read_is_device_unlocked;
  ops.get_unique_guid_for_partition = get_unique_guid_for_partition;
  ops.read_persistent_value = read_persistent_value;
  ops.write_persistent_value = write_persistent_value;
  memcpy(values, given, sizeof values);
  num_values = num_given;
  locked = avb_slot_verify(&ops, requested, suffix, AVB_SLOT_VERIFY_FLAGS_NONE, mode, &data);
  if (detailed) report("locked", locked, data);
  if (data != NULL) avb_slot_verify_data_free(data);
  data = NULL;
  unlocked = 1;
  memcpy(values, given, sizeof values);
  num_values = num_given;
  {
    /* What the unlocked run writes is not reported: it writes no
     * persistent digest (the managed mode may clear its own value). */
    size_t locked_written = num_written;
    open = avb_slot_verify(&ops, requested, suffix, AVB_SLOT_VERIFY_FLAGS_ALLOW_VERIFICATION_ERROR, mode, &data);
    for (digests_written = 0; locked_written < num_written; locked_written++)
      if (strncmp(written[locked_written].name, "avb.persistent_digest.", 22) == 0) digests_written++;
    if (digests_written != 0) {
      fprintf(stderr, "slot_harness: the unlocked run wrote a persistent value\n");
      return 3;
    }
  }
  if (detailed) {
    report("unlocked", open, data);
    if (data != NULL) avb_slot_verify_data_free(data);
    return 0;
  }
  printf("%s %s ", avb_slot_verify_result_to_string(locked), avb_slot_verify_result_to_string(open));
  if (data == NULL) {
    printf("-");
  } else {
    uint8_t digest[AVB_SHA256_DIGEST_SIZE];
    avb_slot_verify_data_calculate_vbmeta_digest(data, AVB_DIGEST_TYPE_SHA256, digest);
    for (i = 0; i < AVB_SHA256_DIGEST_SIZE; i++) printf("%02x", digest[i]);
    avb_slot_verify_data_free(data);
  }
  printf(" ");
  if (num_written == 0) printf("-");
  for (n = 0; n < num_written; n++) {
    size_t j;
    printf("%s%s=", n > 0 ? "," : "", written[n].name);
    for (j = 0; j < written[n].len; j++) printf("%02x", written[n].data[j]);
  }
  printf("\n");
  return 0;
}
