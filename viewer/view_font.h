/* view_font.h: the viewer's tiny bitmap font (5x7 pixels in a 6x9 cell, printable ASCII). */
#ifndef DLCA_VIEW_FONT_H
#define DLCA_VIEW_FONT_H

enum { VIEW_FONT_WIDTH = 5, VIEW_FONT_HEIGHT = 7, VIEW_FONT_ADVANCE = 6, VIEW_FONT_LINE = 9 };

/* Is pixel (x, y) of character c on? Characters outside printable ASCII show as '?'. */
int view_font_pixel(char c, int x, int y);

#endif
