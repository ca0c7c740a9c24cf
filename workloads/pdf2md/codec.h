// Byte codecs (rayorch::Codec) for the values the pdf2md stages pass between each other, so
// they can cross a process boundary (e.g. between the Ray actors of the Python package).
// PageRef, PageImage (the renderer's worker processes) and Markdown (the run journal) have
// theirs in pdf2md.h; this adds the rest.
#pragma once

#include <string>
#include <string_view>

#include "pdf2md/pdf2md.h"

#include "rayorch/codec.h"

template <>
struct rayorch::Codec<pdf2md::DocumentInfo> {
  template <ByteSink S>
  static void encode(const pdf2md::DocumentInfo& v, S& out) {
    Codec<std::string>::encode(v.stem, out);
    Codec<std::uint32_t>::encode(v.pages, out);
  }
  static pdf2md::DocumentInfo decode(std::string_view& in) {
    pdf2md::DocumentInfo v;
    v.stem = Codec<std::string>::decode(in);
    v.pages = Codec<std::uint32_t>::decode(in);
    return v;
  }
};
