// ember/data/image_folder.h — a folder of photos sorted into one sub-folder per class, decoded
// into memory once (in parallel), cached on disk for the next run.
//
// The layout is torchvision's ImageFolder, and the one of Kaggle's cats-vs-dogs set:
//   ROOT/Cat/0.jpg, ROOT/Cat/1.jpg, ...    label 0
//   ROOT/Dog/0.jpg, ...                    label 1
// The classes are the sub-folder names sorted (byte order), a label is the class's index in that
// list. Samples are ordered by class, then by file name (sorted), so two runs give the same
// dataset. Hidden entries (names starting with '.') are ignored, which includes the cache's own
// folder ROOT/.ember-cache; files in sub-folders of a class folder are not read.
//
// Seed 002 builds its training data with a loop of cv2.imread(path, cv2.IMREAD_GRAYSCALE) and
// cv2.resize(img, (50, 50)), which takes about 20 minutes for the 25,000 photos; here
//   data::ImageFolder pets("PetImages");       // 50x50 grayscale by default
//   pets.images();   // uint8 [N, 1, 50, 50]
//   pets.labels();   // int64 [N]: 0 = Cat, 1 = Dog
//   std::cout << pets.summary() << "\n";       // "Cat: <n>, Dog: <m>", as the seed prints
//                                              // "Cats: 12476" and "Dogs: 12470"
// decodes them in seconds on two cores (see data/image_decode.h for how a file is decoded) and
// reads them back from the cache in well under a second on the next run.
//
// Files that cannot be decoded — empty, unreadable, truncated, damaged, not an image at all (the
// Kaggle folders hold a Thumbs.db each) — are skipped, each with one warning line on stderr that
// names the file and the reason, then a summary with the count. What is an error instead (an
// ember::IOError that says which layout is expected): a missing root, a root with no class
// folders, an empty class folder, or a folder where not a single file decodes.
//
// The cache is one file, ROOT/.ember-cache/imagefolder-<H>x<W>-<gray|rgb>.bin by default. It
// holds the options, the class list, the list of source files with their sizes and modification
// times, the labels and the pixels, and a checksum. It is used only when the folder's listing
// (every path, size and mtime) and the options are exactly those it was built from; otherwise,
// or if it is damaged, the folder is decoded again and the cache rewritten. It is written to a
// temporary file and renamed into place, so an interrupted run never leaves a half-written cache.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace ember::data {

struct ImageFolderOptions {
  int64_t height = 50, width = 50;
  bool grayscale = true;  // false: RGB, 3 channels
  int threads = 0;        // decoding threads; 0 = all cores
  // Where the decoded cache goes; "" = ROOT/.ember-cache. A folder that cannot be written to
  // gives one warning and the dataset is loaded without a cache.
  std::string cache_dir;
  bool use_cache = true;
  bool verbose = true;  // one warning line per skipped file, a summary, per-class counts
};

// A file that was not decoded and why ("truncated JPEG: Premature end of JPEG file").
struct SkippedFile {
  std::string path;  // relative to the root: "Cat/666.jpg"
  std::string reason;
};

class ImageFolder : public TensorDataset {
 public:
  // images uint8 [N, C, H, W] (C = 1 or 3), labels int64 [N]. Throws ember::IOError for a
  // missing root, a root without class folders, an empty class folder, or no decodable image.
  explicit ImageFolder(const std::string& root, ImageFolderOptions options = {},
                       Transform transform = {});

  const std::vector<std::string>& classes() const { return classes_; }
  std::vector<int64_t> class_counts() const;  // images per class, in the order of classes()
  int64_t skipped() const { return static_cast<int64_t>(skipped_files_.size()); }
  const std::vector<SkippedFile>& skipped_files() const { return skipped_files_; }
  bool from_cache() const { return from_cache_; }  // this run read the decoded cache
  const std::string& root() const { return root_; }
  const std::string& cache_path() const { return cache_path_; }  // "" when not cached
  // "Cat: 3, Dog: 5": images per class, in the manner of the seed's "Cats: N" / "Dogs: M".
  std::string summary() const;

  const Tensor& images() const { return data(); }     // uint8 [N, C, H, W]
  const Tensor& labels() const { return targets(); }  // int64 [N]

  struct Loaded;  // what a load found (public so that image_folder.cpp's helpers can take it)

 private:
  static Loaded load(const std::string& root, const ImageFolderOptions& options);
  ImageFolder(Loaded loaded, Transform transform);

  std::string root_, cache_path_;
  std::vector<std::string> classes_;
  std::vector<SkippedFile> skipped_files_;
  bool from_cache_ = false;
};

// The same folder decoded on the fly, as torchvision's ImageFolder does: the files are listed
// once (the same classes, labels and order as ImageFolder), and every get_batch reads and
// decodes its files again — nothing is cached and only the file list is held in memory, so it
// suits folders too large to keep decoded, and pipelines whose random augmentations should see
// the full image. Decoding is the expensive part: give the DataLoader num_workers to do it in
// parallel. A file that cannot be decoded is an ember::IOError naming it and the reason, thrown
// by the get that needs it (the DataLoader adds the worker and the sample index); nothing is
// skipped silently, since the listing cannot know in advance.
//
//   data::LazyImageFolder pets("PetImages", {/*height=*/64, /*width=*/64},
//                              data::ToFloat(),
//                              data::ComposeAugmentations({data::RandomCrop{56, 56, 0, /*seed=*/1},
//                                                          data::RandomHorizontalFlip{0.5, 2}}));
//
// Per batch: decode to uint8 [B, C, H, W] -> augmentation(images, indices, epoch) -> transform.
// Safe to call from several threads at once (each thread decodes into its own scratch buffers).
class LazyImageFolder : public Dataset {
 public:
  // Only height, width and grayscale of `options` are used. Throws ember::IOError for a missing
  // root, a root without class folders or an empty class folder.
  explicit LazyImageFolder(const std::string& root, ImageFolderOptions options = {},
                           Transform transform = {}, Augmentation augmentation = {});

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Batch get_batch(const Tensor& indices) const override { return get_batch_for_epoch(indices, 0); }
  Batch get_batch_for_epoch(const Tensor& indices, int64_t epoch) const override;

  const std::vector<std::string>& classes() const { return classes_; }
  const std::vector<std::string>& files() const { return files_; }  // "Cat/0.jpg", ...
  const std::vector<int64_t>& labels() const { return labels_; }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  ImageFolderOptions options_;
  Transform transform_;
  Augmentation augmentation_;
  std::vector<std::string> classes_, files_;
  std::vector<int64_t> labels_;
};

// Where to get Kaggle's cats-vs-dogs photos (PetImages) and how the folder must look: the text
// every layout error ends with.
std::string pet_images_hint();

}  // namespace ember::data
