/*
 * A bootloader whose partitions are the files DIR/NAME.img, for recording
 * libavb's avb_slot_verify on a whole device set (record_slots.sh builds it
 * against AOSP's libavb; libavb itself is not kept here).
 *
 *   slot_harness KEY DIR REQUESTED [LOCATION=INDEX ...]
 *
 * The top-level vbmeta is DIR/vbmeta.img (libavb reads the "vbmeta"
 * partition from its start); a partition whose file is missing does not
 * exist. KEY is the AVB public key blob the device trusts for the top-level
 * vbmeta, or "-" to trust the embedded one. REQUESTED is a comma-separated
 * list of the partitions the bootloader loads (their hash descriptors are
 * checked). Stored rollback indexes are 0 but for the locations given.
 * There are no persistent values. Prints avb_slot_verify's result with the
 * device locked, then unlocked (ALLOW_VERIFICATION_ERROR), then the
 * sha256 androidboot.vbmeta.digest of the unlocked run's data ("-" when
 * there is none).
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

static AvbIOResult get_unique_guid_for_partition(AvbOps* ops, const char* partition, char* buf, size_t size) {
  snprintf(buf, size, "527c1c6d-6361-4593-8842-3c78fcd39219");
  return AVB_IO_RESULT_OK;
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

int main(int argc, char** argv) {
  AvbOps ops;
  const char* requested[16];
  char* list;
  size_t n = 0;
  int i;
  AvbSlotVerifyData* data = NULL;
  AvbSlotVerifyResult locked, open;
  if (argc < 4) {
    fprintf(stderr, "usage: slot_harness KEY DIR REQUESTED [LOCATION=INDEX ...]\n");
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
  locked = avb_slot_verify(&ops, requested, "", AVB_SLOT_VERIFY_FLAGS_NONE, AVB_HASHTREE_ERROR_MODE_RESTART, &data);
  if (data != NULL) avb_slot_verify_data_free(data);
  data = NULL;
  unlocked = 1;
  open = avb_slot_verify(&ops, requested, "", AVB_SLOT_VERIFY_FLAGS_ALLOW_VERIFICATION_ERROR,
                         AVB_HASHTREE_ERROR_MODE_RESTART, &data);
  printf("%s %s ", avb_slot_verify_result_to_string(locked), avb_slot_verify_result_to_string(open));
  if (data == NULL) {
    printf("-\n");
  } else {
    uint8_t digest[AVB_SHA256_DIGEST_SIZE];
    avb_slot_verify_data_calculate_vbmeta_digest(data, AVB_DIGEST_TYPE_SHA256, digest);
    for (i = 0; i < AVB_SHA256_DIGEST_SIZE; i++) printf("%02x", digest[i]);
    printf("\n");
    avb_slot_verify_data_free(data);
  }
  return 0;
}
