package example;

import jakarta.servlet.ServletException;
import jakarta.servlet.annotation.MultipartConfig;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.Part;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** A multipart form, parsed by the container: each part's name, file name, size and SHA-256. */
@WebServlet("/upload")
@MultipartConfig(maxFileSize = 4 * 1024 * 1024, fileSizeThreshold = 64 * 1024)
public class UploadServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException, ServletException {
        res.setContentType("text/plain; charset=UTF-8");
        for (Part p : req.getParts()) {
            res.getWriter().println(p.getName() + " " + p.getSubmittedFileName() + " " + p.getSize()
                    + " " + sha256(p));
        }
    }

    private static String sha256(Part p) throws IOException {
        try (InputStream in = p.getInputStream()) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] b = new byte[8192];
            for (int n; (n = in.read(b)) > 0; ) {
                md.update(b, 0, n);
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
