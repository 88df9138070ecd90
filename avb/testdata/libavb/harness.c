/*
 * A bootloader in a file, for recording libavb's decisions on an image
 * (record.sh builds it against AOSP's libavb; libavb itself is not kept
 * here). Usage: harness KEY IMAGE PARTITION
 *
 * The device has no "vbmeta" partition, so libavb's avb_slot_verify takes
 * the top-level vbmeta from the footer of "boot", which is IMAGE, as is
 * every other partition (PARTITION, requested, so that its hash
 * descriptors are checked). KEY is the AVB public key blob the device
 * trusts, or "-" to trust whatever key the vbmeta embeds. Stored rollback
 * indexes are 0; there are no persistent values. Prints three words:
 * avb_vbmeta_image_verify's result on the blob the footer points at (as
 * load_and_verify_vbmeta reads it), then avb_slot_verify's result with the
 * device locked and unlocked (ALLOW_VERIFICATION_ERROR). With --blobs,
 * prints avb_vbmeta_image_verify's result on each FILE (a vbmeta blob),
 * one a line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavb.h>

static const char* image_path;
static uint8_t* trusted_key;
static size_t trusted_key_len;
static int unlocked;

static AvbIOResult read_from_partition(AvbOps* ops, const char* partition, int64_t offset, size_t num_bytes,
                                       void* buffer, size_t* out_num_read) {
  FILE* f;
  long size;
  if (strncmp(partition, "vbmeta", 6) == 0) return AVB_IO_RESULT_ERROR_NO_SUCH_PARTITION;
  f = fopen(image_path, "rb");
  if (f == NULL) return AVB_IO_RESULT_ERROR_IO;
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
  FILE* f;
  if (strncmp(partition, "vbmeta", 6) == 0) return AVB_IO_RESULT_ERROR_NO_SUCH_PARTITION;
  f = fopen(image_path, "rb");
  if (f == NULL) return AVB_IO_RESULT_ERROR_IO;
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
  *out_index = 0;
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

/* The blob load_and_verify_vbmeta verifies: the footer's, or 64 KiB at 0. */
static const char* vbmeta_verify(void) {
  size_t len, offset = 0, size = 64 * 1024;
  uint8_t* img = read_file(image_path, &len);
  AvbFooter footer;
  if (img == NULL || len < AVB_FOOTER_SIZE) return "NO_IMAGE";
  if (avb_footer_validate_and_byteswap((const AvbFooter*)(img + len - AVB_FOOTER_SIZE), &footer) &&
      footer.vbmeta_size <= 64 * 1024) {
    offset = footer.vbmeta_offset;
    size = footer.vbmeta_size;
  }
  if (offset > len) return "NO_VBMETA";
  if (size > len - offset) size = len - offset;
  {
    /* libavb reads into an aligned buffer of its own. */
    uint8_t* buf = malloc(size + 1);
    memcpy(buf, img + offset, size);
    return avb_vbmeta_verify_result_to_string(avb_vbmeta_image_verify(buf, size, NULL, NULL));
  }
}

int main(int argc, char** argv) {
  AvbOps ops;
  const char* requested[2];
  AvbSlotVerifyData* data = NULL;
  AvbSlotVerifyResult locked, open;
  if (argc > 1 && strcmp(argv[1], "--blobs") == 0) {
    int i;
    for (i = 2; i < argc; i++) {
      size_t len;
      uint8_t* b = read_file(argv[i], &len);
      if (b == NULL) return 2;
      printf("%s\n", avb_vbmeta_verify_result_to_string(avb_vbmeta_image_verify(b, len, NULL, NULL)));
      free(b);
    }
    return 0;
  }
  if (argc != 4) {
    fprintf(stderr, "usage: harness KEY IMAGE PARTITION\n");
    return 2;
  }
  if (strcmp(argv[1], "-") != 0 && (trusted_key = read_file(argv[1], &trusted_key_len)) == NULL) {
    fprintf(stderr, "harness: cannot read %s\n", argv[1]);
    return 2;
  }
  image_path = argv[2];
  requested[0] = argv[3];
  requested[1] = NULL;
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
  if (data != NULL) avb_slot_verify_data_free(data);
  printf("%s %s %s\n", vbmeta_verify(), avb_slot_verify_result_to_string(locked), avb_slot_verify_result_to_string(open));
  return 0;
}
