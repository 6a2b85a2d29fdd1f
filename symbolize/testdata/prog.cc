#include <cstdio>
#include <string>
#include <vector>

namespace geo {
template <typename T>
struct Box {
	std::vector<T> items;
	__attribute__((noinline)) T total(int scale) const
	{
		T t{};
		for (const T &x : items)
			t += x * scale;
		return t;
	}
};

__attribute__((noinline)) int area(int w, int h) { return w * h; }
__attribute__((noinline)) double area(double w, double h) { return w * h; }
} // namespace geo

int main(int argc, char **)
{
	geo::Box<int> b{{1, 2, 3}};
	geo::Box<double> d{{1.5, 2.5}};
	std::printf("%d %f %d %f\n", b.total(argc), d.total(argc), geo::area(argc, 2), geo::area(1.0 * argc, 2.0));
	return 0;
}
