/* vk_shaders.c: the registry of SPIR-V embedded at build time. CMake compiles
 * each glsl/<name>.comp to spv/<name>.spv.h (const uint32_t <name>_spv[]) and lists them in
 * spv/shaders_all.h and spv/shader_list.h; nothing is loaded from a path at run time. */
#include <stdint.h>
#include <string.h>

#include "vk_pipeline.h"

#include "shaders_all.h"

static const vk_shader_code vk_shader_table[] = {
#define DLCA_SHADER(name) {#name, name##_spv, sizeof(name##_spv)},
#include "shader_list.h"
#undef DLCA_SHADER
};

size_t vk_shader_count(void) { return sizeof vk_shader_table / sizeof vk_shader_table[0]; }

const vk_shader_code *vk_shader_at(size_t i) { return i < vk_shader_count() ? &vk_shader_table[i] : NULL; }

const vk_shader_code *vk_shader_find(const char *name)
{
    for (size_t i = 0; i < vk_shader_count(); i++)
        if (strcmp(vk_shader_table[i].name, name) == 0) return &vk_shader_table[i];
    return NULL;
}
