// Copies the device code a program registers (untrusted side): a fatbin container, and the
// relocatable objects a separately compiled (-rdc) image was linked from. The client only finds
// lengths; the worker parses and checks everything.
#pragma once

#include <string>
#include <vector>

#include "client/session/fatbin_layout.h"

namespace agileos::client {

// Copies the fatbin container at `data`: one container, or several back to back when the first
// container's size covers them. False with *problem set when it is missing, malformed in its
// header, larger than 1 GiB or runs past readable memory.
bool copyFatbinContainer(const void* data, std::string* image, std::string* problem);

// A version-2 wrapper (what nvcc's device link registers for -rdc code) lists the relocatable
// objects its image was linked from: a null-terminated array of fatbin containers, filled by the
// link stub before it registers the image. Copies each (in list order) into *objects; nothing for
// any other wrapper. False with *problem set (and *objects empty) when the list is unreadable,
// longer than 4096, or an object cannot be copied: the linked image alone is then sent.
bool copyPrelinkedObjects(const FatbinWrapper& wrapper, std::vector<std::string>* objects,
                          std::string* problem);

}  // namespace agileos::client
